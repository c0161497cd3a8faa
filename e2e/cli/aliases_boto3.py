#!/usr/bin/env python3
"""Aliases with boto3 against Hoist.

Creates an Anywhere fleet (in a custom location) for aliases to point at,
then a SIMPLE and a TERMINAL alias: describe, resolve, list with filters
and the paginator, update, tags, the terminal alias's exception and
message (from ResolveAlias and CreateGameSession), and deletion.

The endpoint comes from HOIST_ENDPOINT (default: Hoist's default address);
credentials and the Region from the environment. Exits non-zero on the
first failed check.
"""

import os

import boto3
from scenario import check, expect_error

ENDPOINT = os.environ.get("HOIST_ENDPOINT", "http://127.0.0.1:9080")
LOCATION = "custom-boto3-aliases"
RETIRED = "This version is retired: please update the game"


def main():
    gl = boto3.client("gamelift", endpoint_url=ENDPOINT)
    ex = gl.exceptions

    gl.create_location(LocationName=LOCATION)
    fleet = gl.create_fleet(Name="boto3-aliases", ComputeType="ANYWHERE",
                            Locations=[{"Location": LOCATION}])["FleetAttributes"]
    fleet_id = fleet["FleetId"]

    live = gl.create_alias(Name="boto3-live", Description="current build",
                           RoutingStrategy={"Type": "SIMPLE", "FleetId": fleet_id},
                           Tags=[{"Key": "game", "Value": "megafrog"}])["Alias"]
    check("alias ID prefix", live["AliasId"].startswith("alias-"), True)
    check("alias ARN suffix", live["AliasArn"].endswith(":alias/" + live["AliasId"]), True)
    check("creation time type", type(live["CreationTime"]).__name__, "datetime")
    resolved = gl.resolve_alias(AliasId=live["AliasArn"])
    check("resolved fleet", resolved["FleetId"], fleet_id)
    check("resolved fleet ARN", resolved["FleetArn"], fleet["FleetArn"])
    check("describe by ID", gl.describe_alias(AliasId=live["AliasId"])["Alias"]["Name"], "boto3-live")

    retired = gl.create_alias(Name="boto3-retired",
                              RoutingStrategy={"Type": "TERMINAL", "Message": RETIRED})["Alias"]
    err = expect_error("resolve a terminal alias", ex.TerminalRoutingStrategyException, gl.resolve_alias,
                       AliasId=retired["AliasId"])
    check("terminal message", err["Message"], RETIRED)
    err = expect_error("game session through a terminal alias", ex.TerminalRoutingStrategyException,
                       gl.create_game_session, AliasId=retired["AliasId"], MaximumPlayerSessionCount=2,
                       Location=LOCATION)
    check("terminal message from CreateGameSession", err["Message"], RETIRED)
    expect_error("SIMPLE alias onto a missing fleet", ex.InvalidRequestException, gl.create_alias,
                 Name="x", RoutingStrategy={"Type": "SIMPLE", "FleetId": "fleet-00000000-0000-4000-8000-000000000000"})

    def ids(**kwargs):
        out = []
        for page in gl.get_paginator("list_aliases").paginate(PaginationConfig={"PageSize": 1}, **kwargs):
            out += [a["AliasId"] for a in page["Aliases"]]
        return out

    check("list all (pages of 1)", ids(), [live["AliasId"], retired["AliasId"]])
    check("list TERMINAL", ids(RoutingStrategyType="TERMINAL"), [retired["AliasId"]])
    check("list by name", ids(Name="boto3-live"), [live["AliasId"]])
    expect_error("bogus NextToken", ex.InvalidRequestException, gl.list_aliases, NextToken="bogus")

    updated = gl.update_alias(AliasId=retired["AliasId"], Name="boto3-revived",
                              RoutingStrategy={"Type": "SIMPLE", "FleetId": fleet_id})["Alias"]
    check("updated name", updated["Name"], "boto3-revived")
    check("updated time moves", updated["LastUpdatedTime"] >= updated["CreationTime"], True)
    check("revived alias resolves", gl.resolve_alias(AliasId=retired["AliasId"])["FleetId"], fleet_id)

    arn = live["AliasArn"]

    def tags():
        return [(t["Key"], t["Value"]) for t in gl.list_tags_for_resource(ResourceARN=arn)["Tags"]]

    check("tags from create", tags(), [("game", "megafrog")])
    gl.tag_resource(ResourceARN=arn, Tags=[{"Key": "team", "Value": "frogs"}])
    gl.untag_resource(ResourceARN=arn, TagKeys=["game"])
    check("tags after tag and untag", tags(), [("team", "frogs")])

    for alias in (live, retired):
        gl.delete_alias(AliasId=alias["AliasId"])
    expect_error("delete again", ex.NotFoundException, gl.delete_alias, AliasId=live["AliasId"])
    expect_error("tags of a deleted alias", ex.NotFoundException, gl.list_tags_for_resource, ResourceARN=arn)
    check("list after deletes", ids(), [])
    gl.delete_fleet(FleetId=fleet_id)
    print("aliases_boto3: PASS")


if __name__ == "__main__":
    main()
