#!/usr/bin/env bash
# FleetIQ with the aws CLI against Hoist: the README's walkthrough, checked.
#
# Every `aws gamelift ...` line is a command the README can show as it is.
# Credentials and the Region come from the environment
# (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION); the
# endpoint from HOIST_ENDPOINT (default: Hoist's default address).
set -euo pipefail

E=${HOIST_ENDPOINT:-http://127.0.0.1:9080}
GROUP=MegaFrogServers_NA

fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
  echo "ok: $1 = $3"
}
expect_error() { # expect_error CODE COMMAND...: the command fails with CODE
  local code=$1 out
  shift
  if out=$("$@" 2>&1); then fail "$* succeeded, want $code"; fi
  case $out in *"($code)"*) echo "ok: $code" ;; *) fail "$*: want $code, got: $out" ;; esac
}
wait_for() { # wait_for WHAT WANT COMMAND...: poll COMMAND until it prints WANT
  local what=$1 want=$2 got=""
  shift 2
  for _ in $(seq 1 100); do
    got=$("$@") || true
    [ "$got" = "$want" ] && { echo "ok: $what = $want"; return 0; }
    sleep 0.2
  done
  fail "$what: still '$got', want '$want'"
}

# A game server group (Hoist launches no EC2 instances: the instances are
# those its game servers register on).
ARN=$(aws gamelift create-game-server-group --endpoint-url $E --game-server-group-name $GROUP \
    --role-arn arn:aws:iam::123456789012:role/gamelift --min-size 1 --max-size 2 \
    --launch-template LaunchTemplateId=lt-0123456789abcdef0 \
    --instance-definitions InstanceType=c5.large InstanceType=c5.xlarge \
    --query GameServerGroup.GameServerGroupArn --output text)
case $ARN in arn:aws:gamelift:*:gameservergroup/$GROUP) echo "ok: group ARN $ARN" ;; *) fail "group ARN $ARN" ;; esac
expect_error ConflictException aws gamelift create-game-server-group --endpoint-url $E --game-server-group-name $GROUP \
    --role-arn arn:aws:iam::123456789012:role/gamelift --min-size 1 --max-size 2 \
    --launch-template LaunchTemplateId=lt-0123456789abcdef0 \
    --instance-definitions InstanceType=c5.large InstanceType=c5.xlarge
wait_for "group status" ACTIVE \
    aws gamelift describe-game-server-group --endpoint-url $E --game-server-group-name $GROUP \
    --query GameServerGroup.Status --output text

# The seed's game server registers, and is claimed.
aws gamelift register-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678 --instance-id i-1234567890abcdef0 \
    --connection-info 192.0.2.0.80
expect_error ConflictException aws gamelift register-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678 --instance-id i-1234567890abcdef0
CLAIM=$(aws gamelift claim-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --query '[GameServer.GameServerId, GameServer.ClaimStatus, GameServer.ConnectionInfo]' --output text)
expect "claim" "$CLAIM" "$(printf 'mega-frog-game-12345678\tCLAIMED\t192.0.2.0.80')"
expect_error OutOfCapacityException aws gamelift claim-game-server --endpoint-url $E --game-server-group-name $GROUP

# Players are on it; then it is free again. Each update is a health check.
expect "utilized" "$(aws gamelift update-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678 --utilization-status UTILIZED --health-check HEALTHY \
    --query GameServer.UtilizationStatus --output text)" UTILIZED
expect "available" "$(aws gamelift update-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678 --utilization-status AVAILABLE --health-check HEALTHY \
    --query GameServer.UtilizationStatus --output text)" AVAILABLE
expect "game servers" "$(aws gamelift list-game-servers --endpoint-url $E --game-server-group-name $GROUP \
    --query 'GameServers[].GameServerId' --output text)" mega-frog-game-12345678
expect "instances" "$(aws gamelift describe-game-server-instances --endpoint-url $E --game-server-group-name $GROUP \
    --query 'GameServerInstances[].[InstanceId, InstanceStatus]' --output text)" "$(printf 'i-1234567890abcdef0\tACTIVE')"

# Tags on the group.
aws gamelift tag-resource --endpoint-url $E --resource-arn $ARN --tags Key=team,Value=frogs Key=tier,Value=gold
expect "tags" "$(aws gamelift list-tags-for-resource --endpoint-url $E --resource-arn $ARN \
    --query 'sort_by(Tags, &Key)[].[Key, Value]' --output text)" "$(printf 'team\tfrogs\ntier\tgold')"
aws gamelift untag-resource --endpoint-url $E --resource-arn $ARN --tag-keys tier
expect "tags after untag" "$(aws gamelift list-tags-for-resource --endpoint-url $E --resource-arn $ARN \
    --query 'Tags[].Key' --output text)" team

# The game server leaves, the group goes.
aws gamelift deregister-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678
expect_error NotFoundException aws gamelift describe-game-server --endpoint-url $E --game-server-group-name $GROUP \
    --game-server-id mega-frog-game-12345678
aws gamelift delete-game-server-group --endpoint-url $E --game-server-group-name $GROUP
wait_for "group status" DELETED \
    aws gamelift describe-game-server-group --endpoint-url $E --game-server-group-name $GROUP \
    --query GameServerGroup.Status --output text
echo "fleetiq_cli: PASS"
