#!/usr/bin/env bash
# The README's hosting steps as one command, for the pages that need a fleet:
# builds Hoist's test game server, uploads it with the aws CLI, creates a fleet
# running two server processes and waits until the fleet is ACTIVE. Run from
# the repository root with the AWS_* variables set, as the README's
# walkthrough sets them:
#
#   FLEET=$(bash docs/examples/hosting/fleet.sh $E [name])
#
# It prints the fleet ID on standard output, everything else on standard
# error. A fleet that goes to ERROR ends it with status 1 and the fleet's
# events.
set -euo pipefail
E=${1:?usage: fleet.sh ENDPOINT [NAME]}
NAME=${2:-mygame}
GAME=$(mktemp -d) && go build -o "$GAME/gameserver" ./e2e/gameserver
AWS_ENDPOINT_URL_S3=$E aws gamelift upload-build --endpoint-url "$E" --name "$NAME" \
    --build-version 1 --build-root "$GAME" --operating-system AMAZON_LINUX_2023 >&2
BUILD=$(aws gamelift list-builds --endpoint-url "$E" \
    --query "Builds[?Name=='$NAME'] | [-1].BuildId" --output text)
FLEET=$(aws gamelift create-fleet --endpoint-url "$E" --name "$NAME" --build-id "$BUILD" \
    --ec2-instance-type c5.large \
    --runtime-configuration 'ServerProcesses=[{LaunchPath=/local/game/gameserver,ConcurrentExecutions=2}]' \
    --query FleetAttributes.FleetId --output text)
while STATUS=$(aws gamelift describe-fleet-attributes --endpoint-url "$E" --fleet-ids "$FLEET" \
        --query 'FleetAttributes[0].Status' --output text) && [ "$STATUS" != ACTIVE ]; do
    if [ "$STATUS" = ERROR ]; then
        aws gamelift describe-fleet-events --endpoint-url "$E" --fleet-id "$FLEET" >&2
        exit 1
    fi
    sleep 2
done
echo "$FLEET"
