#!/usr/bin/env bash
# Managed hosting with the aws CLI against Hoist: upload a build, run a
# fleet of it, a game session and a player session, then tear it all down.
#
# GAME_DIR is a directory holding the built e2e/gameserver as `gameserver`
# (go build -o "$GAME_DIR/gameserver" ./e2e/gameserver). The endpoint comes
# from HOIST_ENDPOINT (default: Hoist's default address); credentials and
# the Region from the environment. The upload's S3 client is pointed at
# Hoist with AWS_ENDPOINT_URL_S3. Prints KEY=value lines (BUILD_ID,
# FLEET_ID, GAME_SESSION_ID, PLAYER_SESSION_ID) for whoever runs it.
set -euo pipefail

E=${HOIST_ENDPOINT:-http://127.0.0.1:9080}
GAME_DIR=${GAME_DIR:?set GAME_DIR to a directory holding the built e2e/gameserver}

fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
  echo "ok: $1 = $3"
}
expect_error() { # expect_error CODE COMMAND...
  local code=$1 out
  shift
  if out=$("$@" 2>&1); then fail "$* succeeded, want $code"; fi
  case $out in *"($code)"*) echo "ok: $code" ;; *) fail "$*: want $code, got: $out" ;; esac
}
wait_for() { # wait_for WHAT WANT COMMAND...: poll COMMAND until it prints WANT
  local what=$1 want=$2 got=""
  shift 2
  for _ in $(seq 1 300); do
    got=$("$@") || true
    [ "$got" = "$want" ] && { echo "ok: $what = $want"; return 0; }
    case $got in ERROR | FAILED) fail "$what: $got" ;; esac
    sleep 0.2
  done
  fail "$what: still '$got', want '$want'"
}

[ -x "$GAME_DIR/gameserver" ] || fail "$GAME_DIR/gameserver is missing"

# Upload: the CLI zips GAME_DIR, asks for upload credentials and puts the
# zip with its own S3 client, which AWS_ENDPOINT_URL_S3 sends to Hoist.
OUT=$(AWS_ENDPOINT_URL_S3=$E aws gamelift upload-build --endpoint-url $E --name mygame \
    --build-version 1 --build-root "$GAME_DIR" --operating-system AMAZON_LINUX_2023)
BUILD_ID=$(printf '%s\n' "$OUT" | tr '\r' '\n' | sed -n 's/^Build ID: *//p')
case $BUILD_ID in build-*) echo "BUILD_ID=$BUILD_ID" ;; *) fail "no build ID in: $OUT" ;; esac
wait_for "build status" READY \
    aws gamelift describe-build --endpoint-url $E --build-id $BUILD_ID --query Build.Status --output text

# A fleet of one instance running one server process of the build.
FLEET_ID=$(aws gamelift create-fleet --endpoint-url $E --name mygame --build-id $BUILD_ID \
    --ec2-instance-type c5.large \
    --runtime-configuration 'ServerProcesses=[{LaunchPath=/local/game/gameserver,ConcurrentExecutions=1}]' \
    --query FleetAttributes.FleetId --output text)
echo "FLEET_ID=$FLEET_ID"
wait_for "fleet status" ACTIVE \
    aws gamelift describe-fleet-attributes --endpoint-url $E --fleet-ids $FLEET_ID \
    --query 'FleetAttributes[0].Status' --output text
aws gamelift describe-fleet-events --endpoint-url $E --fleet-id $FLEET_ID --query 'Events[].EventCode' --output text

# A game session on it, and a player.
GAME_SESSION_ID=$(aws gamelift create-game-session --endpoint-url $E --fleet-id $FLEET_ID \
    --maximum-player-session-count 4 --name e2e --query GameSession.GameSessionId --output text)
echo "GAME_SESSION_ID=$GAME_SESSION_ID"
wait_for "game session status" ACTIVE \
    aws gamelift describe-game-sessions --endpoint-url $E --game-session-id $GAME_SESSION_ID \
    --query 'GameSessions[0].Status' --output text
PLAYER_SESSION_ID=$(aws gamelift create-player-session --endpoint-url $E --game-session-id $GAME_SESSION_ID \
    --player-id player-1 --query PlayerSession.PlayerSessionId --output text)
echo "PLAYER_SESSION_ID=$PLAYER_SESSION_ID"
expect "player sessions" "$(aws gamelift describe-player-sessions --endpoint-url $E --game-session-id $GAME_SESSION_ID \
    --query 'PlayerSessions[].[PlayerSessionId, PlayerId, Status]' --output text)" "$(printf '%s\tplayer-1\tRESERVED' "$PLAYER_SESSION_ID")"
expect_error GameSessionFullException aws gamelift create-player-sessions --endpoint-url $E \
    --game-session-id $GAME_SESSION_ID --player-ids p2 p3 p4 p5

# End the game session: its process is told to end.
aws gamelift terminate-game-session --endpoint-url $E --game-session-id $GAME_SESSION_ID \
    --termination-mode TRIGGER_ON_PROCESS_TERMINATE --query GameSession.Status --output text
wait_for "game session status" TERMINATED \
    aws gamelift describe-game-sessions --endpoint-url $E --game-session-id $GAME_SESSION_ID \
    --query 'GameSessions[0].Status' --output text

# Tear down.
aws gamelift delete-fleet --endpoint-url $E --fleet-id $FLEET_ID
wait_for "fleet status" TERMINATED \
    aws gamelift describe-fleet-attributes --endpoint-url $E --fleet-ids $FLEET_ID \
    --query 'FleetAttributes[0].Status' --output text
aws gamelift delete-build --endpoint-url $E --build-id $BUILD_ID
expect_error NotFoundException aws gamelift describe-build --endpoint-url $E --build-id $BUILD_ID
echo "hosting_cli: PASS"
