#!/usr/bin/env python3
"""Game session queues and placement with boto3 against Hoist.

Creates an Anywhere fleet (in a custom location, with no compute, so no
placement can be fulfilled) and queues on it: create with tags and
latency policies, describe by name and ARN and with the paginator,
update, and placements that end CANCELLED (stop), TIMED_OUT (a 10 s
queue) and FAILED (the queue is deleted); the errors are caught as
client.exceptions.*. Fulfilment with real game servers is tested in Go
(e2e/hosting TestPlacement); here a second Anywhere fleet with a
registered compute runs three of the test game servers (GAMESERVER: the
built e2e/gameserver), a queue places three game sessions on them, and
search_game_sessions filters them on a game property and sorts them.

The endpoint comes from HOIST_ENDPOINT (default: Hoist's default address);
credentials and the Region from the environment. Exits non-zero on the
first failed check.
"""

import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

import boto3
from scenario import check, expect_error

ENDPOINT = os.environ.get("HOIST_ENDPOINT", "http://127.0.0.1:9080")
LOCATION = "custom-boto3-placement"
SEARCH_LOCATION = "custom-boto3-search"


def wait_for(what, fn, timeout=60):
    """Polls fn until it returns a true value; fails after timeout seconds."""
    deadline = time.time() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.time() > deadline:
            sys.exit(f"FAIL: {what}: not within {timeout} s")
        time.sleep(0.1)  # polling


def search_placed_sessions(gl):
    """Places three game sessions on game servers of an Anywhere compute and
    searches them with a filter on a game property and a sort."""
    gameserver = os.environ.get("GAMESERVER")
    if not gameserver:
        sys.exit("FAIL: set GAMESERVER to the built e2e/gameserver")
    gl.create_location(LocationName=SEARCH_LOCATION)
    fleet = gl.create_fleet(Name="boto3-search", ComputeType="ANYWHERE",
                            Locations=[{"Location": SEARCH_LOCATION}])["FleetAttributes"]
    fid = fleet["FleetId"]
    gl.register_compute(FleetId=fid, ComputeName="boto3-host", IpAddress="127.0.0.1", Location=SEARCH_LOCATION)
    token = gl.get_compute_auth_token(FleetId=fid, ComputeName="boto3-host")["AuthToken"]
    # The SDK's WebSocket on Hoist's plain listener (register_compute hands
    # out the wss:// one, which needs Hoist's CA).
    sdk_url = "ws://" + urllib.parse.urlsplit(ENDPOINT).netloc + "/sdk"
    procs = []
    workdir = tempfile.mkdtemp(prefix="boto3-search-")
    try:
        for i in range(3):
            env = dict(os.environ, GAMELIFT_SDK_WEBSOCKET_URL=sdk_url, GAMELIFT_SDK_AUTH_TOKEN=token,
                       GAMELIFT_SDK_FLEET_ID=fid, GAMELIFT_SDK_HOST_ID="boto3-host",
                       GAMELIFT_SDK_PROCESS_ID=f"boto3-search-{i}")
            procs.append(subprocess.Popen([gameserver], env=env, cwd=workdir,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for("three ready processes", lambda: gl.describe_fleet_location_utilization(
            FleetId=fid, Location=SEARCH_LOCATION)["FleetUtilization"]["ActiveServerProcessCount"] == 3)

        gl.create_game_session_queue(Name="boto3-search", Destinations=[{"DestinationArn": fleet["FleetArn"]}])
        maps = {"s1": "dust", "s2": "nuke", "s3": "dust"}
        for name, m in maps.items():
            gl.start_game_session_placement(
                PlacementId="boto3-" + name, GameSessionQueueName="boto3-search", GameSessionName=name,
                MaximumPlayerSessionCount=4,
                GameProperties=[{"Key": "map", "Value": m}, {"Key": "skill", "Value": name[1]}])
        for name in maps:
            placed = wait_for(f"placement boto3-{name} fulfilled", lambda: (lambda p: p if p["Status"] != "PENDING" else None)(
                gl.describe_game_session_placement(PlacementId="boto3-" + name)["GameSessionPlacement"]))
            check(f"placement boto3-{name}", placed["Status"], "FULFILLED")
            # A placement is FULFILLED once its game session is ACTIVE.
            check(f"game session {name} at FULFILLED", gl.describe_game_sessions(
                GameSessionId=placed["GameSessionArn"])["GameSessions"][0]["Status"], "ACTIVE")

        found = gl.search_game_sessions(FleetId=fid, Location=SEARCH_LOCATION,
                                        FilterExpression="gameSessionProperties.map = 'dust'",
                                        SortExpression="gameSessionProperties.skill DESC")
        check("search map = dust, skill DESC", [g["Name"] for g in found["GameSessions"]], ["s3", "s1"])
        check("searched game properties", {p["Key"]: p["Value"] for p in found["GameSessions"][0]["GameProperties"]},
              {"map": "dust", "skill": "3"})
        check("no next page", "NextToken" in found, False)
        found = gl.search_game_sessions(FleetId=fid, FilterExpression="gameSessionProperties.map <> 'dust' OR "
                                        "gameSessionName = 's1'", SortExpression="gameSessionName ASC")
        check("search map <> dust OR name = s1", [g["Name"] for g in found["GameSessions"]], ["s1", "s2"])
        expect_error("a bad filter", gl.exceptions.InvalidRequestException, gl.search_game_sessions,
                     FleetId=fid, FilterExpression="gameSessionProperties.map = ")
        gl.delete_game_session_queue(Name="boto3-search")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def main():
    gl = boto3.client("gamelift", endpoint_url=ENDPOINT)
    ex = gl.exceptions

    gl.create_location(LocationName=LOCATION)
    fleet = gl.create_fleet(Name="boto3-placement", ComputeType="ANYWHERE",
                            Locations=[{"Location": LOCATION}])["FleetAttributes"]

    queue = gl.create_game_session_queue(
        Name="boto3-queue", Destinations=[{"DestinationArn": fleet["FleetArn"]}],
        PlayerLatencyPolicies=[{"MaximumIndividualPlayerLatencyMilliseconds": 50, "PolicyDurationSeconds": 5},
                               {"MaximumIndividualPlayerLatencyMilliseconds": 200}],
        PriorityConfiguration={"PriorityOrder": ["LATENCY", "DESTINATION"], "LocationOrder": [LOCATION]},
        Tags=[{"Key": "game", "Value": "megafrog"}])["GameSessionQueue"]
    check("queue ARN suffix", queue["GameSessionQueueArn"].endswith(":gamesessionqueue/boto3-queue"), True)
    check("default timeout", queue["TimeoutInSeconds"], 600)
    arn = queue["GameSessionQueueArn"]
    check("tags from create", gl.list_tags_for_resource(ResourceARN=arn)["Tags"], [{"Key": "game", "Value": "megafrog"}])
    expect_error("a queue name twice", ex.InvalidRequestException, gl.create_game_session_queue, Name="boto3-queue")
    expect_error("a build as a destination", ex.InvalidRequestException, gl.create_game_session_queue, Name="bad",
                 Destinations=[{"DestinationArn": "arn:aws:gamelift:us-west-2:123456789012:build/build-1"}])
    gl.create_game_session_queue(Name="boto3-short", TimeoutInSeconds=10,
                                 Destinations=[{"DestinationArn": fleet["FleetArn"]}])

    def names(**kwargs):
        out = []
        for page in gl.get_paginator("describe_game_session_queues").paginate(PaginationConfig={"PageSize": 1}, **kwargs):
            out += [q["Name"] for q in page["GameSessionQueues"]]
        return out

    check("all queues (pages of 1)", names(), ["boto3-queue", "boto3-short"])
    check("by ARN and name", names(Names=[arn, "boto3-short", "missing"]), ["boto3-queue", "boto3-short"])
    updated = gl.update_game_session_queue(Name=arn, TimeoutInSeconds=300)["GameSessionQueue"]
    check("updated timeout", updated["TimeoutInSeconds"], 300)
    check("update keeps the policies", len(updated["PlayerLatencyPolicies"]), 2)

    p = gl.start_game_session_placement(
        PlacementId="boto3-stop", GameSessionQueueName="boto3-queue", MaximumPlayerSessionCount=4,
        PlayerLatencies=[{"PlayerId": "alice", "RegionIdentifier": LOCATION, "LatencyInMilliseconds": 20.5}],
        DesiredPlayerSessions=[{"PlayerId": "alice", "PlayerData": "red"}],
        GameProperties=[{"Key": "mode", "Value": "ctf"}])["GameSessionPlacement"]
    check("started", p["Status"], "PENDING")
    check("start time type", type(p["StartTime"]).__name__, "datetime")
    d = gl.describe_game_session_placement(PlacementId="boto3-stop")["GameSessionPlacement"]
    check("described latency", d["PlayerLatencies"][0]["LatencyInMilliseconds"], 20.5)
    stopped = gl.stop_game_session_placement(PlacementId="boto3-stop")["GameSessionPlacement"]
    check("stopped", stopped["Status"], "CANCELLED")
    check("end time set", "EndTime" in stopped, True)
    expect_error("stop twice", ex.InvalidRequestException, gl.stop_game_session_placement, PlacementId="boto3-stop")
    expect_error("a placement ID twice", ex.InvalidRequestException, gl.start_game_session_placement,
                 PlacementId="boto3-stop", GameSessionQueueName="boto3-queue", MaximumPlayerSessionCount=4)
    expect_error("an unknown queue", ex.NotFoundException, gl.start_game_session_placement,
                 PlacementId="boto3-nowhere", GameSessionQueueName="missing", MaximumPlayerSessionCount=4)
    expect_error("an unknown placement", ex.NotFoundException, gl.describe_game_session_placement, PlacementId="nope")

    gl.start_game_session_placement(PlacementId="boto3-timeout", GameSessionQueueName="boto3-short",
                                    MaximumPlayerSessionCount=2)
    deadline = time.time() + 30
    while True:
        status = gl.describe_game_session_placement(PlacementId="boto3-timeout")["GameSessionPlacement"]["Status"]
        if status != "PENDING" or time.time() > deadline:
            break
        time.sleep(0.1)  # polling the status
    check("no capacity within 10 s", status, "TIMED_OUT")

    gl.start_game_session_placement(PlacementId="boto3-doomed", GameSessionQueueName="boto3-queue",
                                    MaximumPlayerSessionCount=2)
    gl.delete_game_session_queue(Name="boto3-queue")
    check("queue deleted under a pending placement",
          gl.describe_game_session_placement(PlacementId="boto3-doomed")["GameSessionPlacement"]["Status"], "FAILED")
    expect_error("tags of a deleted queue", ex.NotFoundException, gl.list_tags_for_resource, ResourceARN=arn)
    gl.delete_game_session_queue(Name="boto3-short")
    check("queues after deletes", names(), [])
    gl.delete_fleet(FleetId=fleet["FleetId"])
    search_placed_sessions(gl)
    print("placement_boto3: PASS")


if __name__ == "__main__":
    main()
