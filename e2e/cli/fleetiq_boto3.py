#!/usr/bin/env python3
"""FleetIQ and tags with boto3 against Hoist.

The endpoint comes from HOIST_ENDPOINT (default: Hoist's default address);
credentials and the Region from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Errors are caught as boto3's
modeled exceptions (client.exceptions.ConflictException and so on).
Exits non-zero on the first failed check.
"""

import os
import sys
import time

import boto3
from botocore.config import Config
from scenario import check, expect_error

ENDPOINT = os.environ.get("HOIST_ENDPOINT", "http://127.0.0.1:9080")
GROUP = "MegaFrogServers_NA"  # the seed's group name
GAME_SERVER = "mega-frog-game-12345678"
INSTANCE = "i-1234567890abcdef0"


def wait_for(what, want, fn, timeout=20.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = fn()
        if got == want:
            print(f"ok: {what} = {want!r}")
            return
        time.sleep(0.2)
    sys.exit(f"FAIL: {what}: still {got!r}, want {want!r}")


def main():
    gl = boto3.client("gamelift", endpoint_url=ENDPOINT)
    ex = gl.exceptions

    group = gl.create_game_server_group(
        GameServerGroupName=GROUP,
        RoleArn="arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole",
        MinSize=1,
        MaxSize=2,
        LaunchTemplate={"LaunchTemplateName": "mega-frog-template"},
        InstanceDefinitions=[{"InstanceType": "c5.large"}, {"InstanceType": "c5a.large", "WeightedCapacity": "2"}],
        Tags=[{"Key": "game", "Value": "megafrog"}],
    )["GameServerGroup"]
    arn = group["GameServerGroupArn"]
    check("group name", group["GameServerGroupName"], GROUP)
    check("group ARN suffix", arn.endswith(":gameservergroup/" + GROUP), True)
    check("creation time type", type(group["CreationTime"]).__name__, "datetime")
    expect_error("second create", ex.ConflictException, gl.create_game_server_group,
                 GameServerGroupName=GROUP, RoleArn="arn:aws:iam::123456789012:role/r", MinSize=1, MaxSize=2,
                 LaunchTemplate={"LaunchTemplateId": "lt-0123456789abcdef0"},
                 InstanceDefinitions=[{"InstanceType": "c5.large"}, {"InstanceType": "c5.xlarge"}])
    wait_for("group status", "ACTIVE",
             lambda: gl.describe_game_server_group(GameServerGroupName=GROUP)["GameServerGroup"]["Status"])
    check("describe by ARN", gl.describe_game_server_group(GameServerGroupName=arn)["GameServerGroup"]["GameServerGroupName"], GROUP)

    # The seed's sample game server.
    gs = gl.register_game_server(GameServerGroupName=GROUP, GameServerId=GAME_SERVER, InstanceId=INSTANCE,
                                 ConnectionInfo="192.0.2.0.80", GameServerData="{\"map\": \"swamp\"}")["GameServer"]
    check("registered", (gs["GameServerId"], gs["InstanceId"], gs["UtilizationStatus"]), (GAME_SERVER, INSTANCE, "AVAILABLE"))
    check("no claim yet", "LastClaimTime" in gs, False)
    expect_error("second register", ex.ConflictException, gl.register_game_server,
                 GameServerGroupName=GROUP, GameServerId=GAME_SERVER, InstanceId=INSTANCE)

    claimed = gl.claim_game_server(GameServerGroupName=GROUP)["GameServer"]
    check("claim", (claimed["GameServerId"], claimed["ClaimStatus"], claimed["ConnectionInfo"]),
          (GAME_SERVER, "CLAIMED", "192.0.2.0.80"))
    check("claim time", "LastClaimTime" in claimed, True)
    expect_error("claim with nothing available", ex.OutOfCapacityException, gl.claim_game_server, GameServerGroupName=GROUP)
    expect_error("claim of an unknown game server", ex.NotFoundException, gl.claim_game_server,
                 GameServerGroupName=GROUP, GameServerId="no-such-server")

    up = gl.update_game_server(GameServerGroupName=GROUP, GameServerId=GAME_SERVER,
                               UtilizationStatus="UTILIZED", HealthCheck="HEALTHY")["GameServer"]
    check("utilized", up["UtilizationStatus"], "UTILIZED")
    up = gl.update_game_server(GameServerGroupName=GROUP, GameServerId=GAME_SERVER,
                               UtilizationStatus="AVAILABLE", HealthCheck="HEALTHY", GameServerData="{\"map\": \"pond\"}")["GameServer"]
    check("available", (up["UtilizationStatus"], up["GameServerData"]), ("AVAILABLE", "{\"map\": \"pond\"}"))
    # Hoist validates what botocore would have refused (its client-side
    # validation off): the message names the member and the constraint.
    unchecked = boto3.client("gamelift", endpoint_url=ENDPOINT, config=Config(parameter_validation=False))
    err = expect_error("Limit 0 (server-side validation)", unchecked.exceptions.InvalidRequestException, unchecked.list_game_servers,
                     GameServerGroupName=GROUP, Limit=0)
    msg = err["Message"]
    check("validation message", "'Limit'" in msg and "greater than or equal to 1" in msg, True)
    listed = gl.list_game_servers(GameServerGroupName=GROUP, SortOrder="ASCENDING")["GameServers"]
    check("list game servers", [g["GameServerId"] for g in listed], [GAME_SERVER])
    pages = gl.get_paginator("list_game_servers").paginate(GameServerGroupName=GROUP, PaginationConfig={"PageSize": 1})
    check("paginated list", [g["GameServerId"] for p in pages for g in p["GameServers"]], [GAME_SERVER])
    inst = gl.describe_game_server_instances(GameServerGroupName=GROUP)["GameServerInstances"]
    check("instances", [(i["InstanceId"], i["InstanceStatus"]) for i in inst], [(INSTANCE, "ACTIVE")])
    inst = gl.describe_game_server_instances(GameServerGroupName=GROUP, InstanceIds=[INSTANCE])["GameServerInstances"]
    check("instance by ID", [i["InstanceId"] for i in inst], [INSTANCE])

    # Tags.
    def tags():
        return sorted((t["Key"], t["Value"]) for t in gl.list_tags_for_resource(ResourceARN=arn)["Tags"])
    check("tags from create", tags(), [("game", "megafrog")])
    gl.tag_resource(ResourceARN=arn, Tags=[{"Key": "team", "Value": "frogs"}, {"Key": "game", "Value": "megafrog2"}])
    check("tags after tag", tags(), [("game", "megafrog2"), ("team", "frogs")])
    gl.untag_resource(ResourceARN=arn, TagKeys=["game"])
    check("tags after untag", tags(), [("team", "frogs")])
    expect_error("tags of an unknown group", ex.NotFoundException, gl.list_tags_for_resource,
                 ResourceARN=arn.replace(GROUP, "NoSuchGroup"))

    # A body larger than the operation's input can be (a GameServerId of at
    # most 128 characters) is refused before it is read, as a ClientError.
    err = expect_error("describe with a 1 MB GameServerId", gl.exceptions.ClientError, gl.describe_game_server,
                       GameServerGroupName=GROUP, GameServerId="g" * 1_000_000)
    check("oversized body code", err["Code"], "RequestEntityTooLargeException")

    gl.deregister_game_server(GameServerGroupName=GROUP, GameServerId=GAME_SERVER)
    expect_error("describe after deregister", ex.NotFoundException, gl.describe_game_server,
                 GameServerGroupName=GROUP, GameServerId=GAME_SERVER)
    deleted = gl.delete_game_server_group(GameServerGroupName=GROUP)["GameServerGroup"]
    check("delete answer", deleted["GameServerGroupName"], GROUP)
    wait_for("group status", "DELETED",
             lambda: gl.describe_game_server_group(GameServerGroupName=GROUP)["GameServerGroup"]["Status"])
    print("fleetiq_boto3: PASS")


if __name__ == "__main__":
    main()
