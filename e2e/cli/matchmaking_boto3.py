#!/usr/bin/env python3
"""FlexMatch rule sets, configurations and tickets with boto3 against Hoist.

Validates and creates a 1v1 rule set (and refuses broken ones), pages
describe_matchmaking_rule_sets, creates STANDALONE configurations, then
runs tickets: two that complete with a team each, a pair that must
accept (one accepts, the other rejects: the first searches again), a
ticket that times out after 1 s and one that is stopped. Errors are
caught as client.exceptions.*. At the end it deletes everything it made.

The endpoint comes from HOIST_ENDPOINT (default: Hoist's default address);
credentials and the Region from the environment. Exits non-zero on the
first failed check.
"""

import json
import os
import sys
import time

import boto3
from scenario import check, expect_error

ENDPOINT = os.environ.get("HOIST_ENDPOINT", "http://127.0.0.1:9080")

DUEL = json.dumps({
    "name": "duel", "ruleLanguageVersion": "1.0",
    "playerAttributes": [{"name": "skill", "type": "number", "default": 10}],
    "teams": [{"name": "red", "minPlayers": 1, "maxPlayers": 1}, {"name": "blue", "minPlayers": 1, "maxPlayers": 1}],
})


def wait_status(gl, ticket, status, timeout=30):
    """Polls describe_matchmaking until the ticket has status."""
    deadline = time.time() + timeout
    while True:
        got = gl.describe_matchmaking(TicketIds=[ticket])["TicketList"][0]
        if got["Status"] == status:
            print(f"ok: ticket {ticket} is {status}")
            return got
        if time.time() > deadline:
            sys.exit(f"FAIL: ticket {ticket} is {got['Status']}, want {status} within {timeout} s")
        time.sleep(0.05)  # polling


def start(gl, config, ticket, player):
    t = gl.start_matchmaking(ConfigurationName=config, TicketId=ticket,
                             Players=[{"PlayerId": player, "PlayerAttributes": {"skill": {"N": 20}}}])["MatchmakingTicket"]
    check(f"ticket {ticket} starts", t["Status"], "QUEUED")


def main():
    gl = boto3.client("gamelift", endpoint_url=ENDPOINT)
    ex = gl.exceptions

    check("validate", gl.validate_matchmaking_rule_set(RuleSetBody=DUEL)["Valid"], True)
    err = expect_error("a rule set without teams", ex.InvalidRequestException, gl.validate_matchmaking_rule_set,
                       RuleSetBody=json.dumps({"ruleLanguageVersion": "1.0", "teams": []}))
    check("the message names the field", err["Message"].startswith("RuleSetBody: teams"), True)
    rs = gl.create_matchmaking_rule_set(Name="boto3-duel", RuleSetBody=DUEL, Tags=[{"Key": "by", "Value": "boto3"}])["RuleSet"]
    check("rule set ARN", rs["RuleSetArn"].endswith(":matchmakingruleset/boto3-duel"), True)
    gl.create_matchmaking_rule_set(Name="boto3-other", RuleSetBody=DUEL)
    expect_error("the same name twice", ex.InvalidRequestException, gl.create_matchmaking_rule_set,
                 Name="boto3-duel", RuleSetBody=DUEL)
    names = [r["RuleSetName"] for page in gl.get_paginator("describe_matchmaking_rule_sets").paginate(Limit=1)
             for r in page["RuleSets"]]
    check("rule sets, a page of one at a time", names, ["boto3-duel", "boto3-other"])
    expect_error("an unknown rule set", ex.NotFoundException, gl.describe_matchmaking_rule_sets, Names=["nope"])
    check("tags", gl.list_tags_for_resource(ResourceARN=rs["RuleSetArn"])["Tags"], [{"Key": "by", "Value": "boto3"}])

    common = dict(RuleSetName=rs["RuleSetArn"], FlexMatchMode="STANDALONE", RequestTimeoutSeconds=60)
    gl.create_matchmaking_configuration(Name="boto3-duel", AcceptanceRequired=False, **common)
    gl.create_matchmaking_configuration(Name="boto3-accept", AcceptanceRequired=True, AcceptanceTimeoutSeconds=30, **common)
    gl.create_matchmaking_configuration(Name="boto3-short", AcceptanceRequired=False,
                                        **dict(common, RequestTimeoutSeconds=1))
    expect_error("a rule set in use", ex.InvalidRequestException, gl.delete_matchmaking_rule_set, Name="boto3-duel")

    # A match of two tickets.
    start(gl, "boto3-duel", "boto3-a", "alice")
    start(gl, "boto3-duel", "boto3-b", "bob")
    a = wait_status(gl, "boto3-a", "COMPLETED")
    b = wait_status(gl, "boto3-b", "COMPLETED")
    check("teams", sorted([a["Players"][0]["Team"], b["Players"][0]["Team"]]), ["blue", "red"])
    expect_error("a used ticket ID", ex.InvalidRequestException, gl.start_matchmaking,
                 ConfigurationName="boto3-duel", TicketId="boto3-a", Players=[{"PlayerId": "alice"}])

    # Acceptance: one accepts, the other rejects.
    start(gl, "boto3-accept", "boto3-c", "carol")
    expect_error("accept before a match", ex.InvalidRequestException, gl.accept_match,
                 TicketId="boto3-c", PlayerIds=["carol"], AcceptanceType="ACCEPT")
    start(gl, "boto3-accept", "boto3-d", "dave")
    wait_status(gl, "boto3-c", "REQUIRES_ACCEPTANCE")
    wait_status(gl, "boto3-d", "REQUIRES_ACCEPTANCE")
    gl.accept_match(TicketId="boto3-c", PlayerIds=["carol"], AcceptanceType="ACCEPT")
    gl.accept_match(TicketId="boto3-d", PlayerIds=["dave"], AcceptanceType="REJECT")
    wait_status(gl, "boto3-c", "SEARCHING")
    wait_status(gl, "boto3-d", "CANCELLED")
    gl.stop_matchmaking(TicketId="boto3-c")
    wait_status(gl, "boto3-c", "CANCELLED")
    expect_error("stop a cancelled ticket", ex.InvalidRequestException, gl.stop_matchmaking, TicketId="boto3-c")

    # A ticket no one matches times out.
    start(gl, "boto3-short", "boto3-e", "eve")
    wait_status(gl, "boto3-e", "TIMED_OUT")
    check("describe leaves unknown tickets out",
          [t["TicketId"] for t in gl.describe_matchmaking(TicketIds=["nope", "boto3-e"])["TicketList"]], ["boto3-e"])

    for c in ("boto3-duel", "boto3-accept", "boto3-short"):
        gl.delete_matchmaking_configuration(Name=c)
    for r in ("boto3-duel", "boto3-other"):
        gl.delete_matchmaking_rule_set(Name=r)
    check("rule sets left", gl.describe_matchmaking_rule_sets()["RuleSets"], [])
    print("matchmaking_boto3: PASS")


if __name__ == "__main__":
    main()
