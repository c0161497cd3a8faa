package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/sigv4"
)

const adminUsage = `usage: hoist admin <command> [flags]

commands:
  set-instance-status   set a FleetIQ instance's status (ACTIVE, DRAINING or SPOT_TERMINATING)
  send-test-event       publish a test event to a topic's webhooks and the event stream
  create-enrolment-token  create a token pool hosts enrol with (hoist agent --pool)
  list-hosts            list the pool hosts
  drain-host            drain a pool host: no new instances; its instances end as their sessions do
  undrain-host          end a pool host's draining: it takes new instances again
  clock                 show Hoist's clock (real or manual) and its time
  clock advance <d>     move a manual clock (--clock manual) forward by d, e.g. 90s
  remove-host           remove a pool host (refused while it runs instances, unless --force)

Hoist's URL comes from --endpoint, else $HOIST_ENDPOINT, $AWS_ENDPOINT_URL_GAMELIFT or
$AWS_ENDPOINT_URL, else http://127.0.0.1:9080. Requests are signed with SigV4 like any
GameLift call, with --access-key-id/--secret-access-key or $AWS_ACCESS_KEY_ID and
$AWS_SECRET_ACCESS_KEY; without them, with a placeholder key, which a Hoist without
configured credentials accepts.
`

func admin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, adminUsage)
		return 0
	}
	switch args[0] {
	case "set-instance-status":
		return setInstanceStatus(args[1:], stdout, stderr)
	case "send-test-event":
		return sendTestEvent(args[1:], stdout, stderr)
	case "create-enrolment-token":
		return createEnrolmentToken(args[1:], stdout, stderr)
	case "list-hosts":
		return listHosts(args[1:], stdout, stderr)
	case "drain-host":
		return drainHost(args[1:], stdout, stderr)
	case "undrain-host":
		return undrainHost(args[1:], stdout, stderr)
	case "clock":
		return adminClock(args[1:], stdout, stderr)
	case "remove-host":
		return removeHost(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "hoist admin: unknown command %q\n%s", args[0], adminUsage)
	return 2
}

// adminClient sends signed admin actions to a Hoist.
type adminClient struct {
	endpoint, region string
	creds            aws.Credentials
	http             *http.Client
	now              func() time.Time
}

func adminFlags(fs *flag.FlagSet) *adminClient {
	c := &adminClient{http: &http.Client{Timeout: 30 * time.Second}, now: time.Now}
	env := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	def := env("HOIST_ENDPOINT", "AWS_ENDPOINT_URL_GAMELIFT", "AWS_ENDPOINT_URL")
	if def == "" {
		def = "http://" + config.DefaultAddr
	}
	fs.StringVar(&c.endpoint, "endpoint", def, "Hoist's URL ($HOIST_ENDPOINT, else $AWS_ENDPOINT_URL_GAMELIFT, else $AWS_ENDPOINT_URL)")
	region := env("AWS_REGION", "AWS_DEFAULT_REGION")
	if region == "" {
		region = config.DefaultRegion
	}
	fs.StringVar(&c.region, "region", region, "region to sign for ($AWS_REGION, else $AWS_DEFAULT_REGION)")
	fs.StringVar(&c.creds.AccessKeyID, "access-key-id", env("AWS_ACCESS_KEY_ID"), "access key ID ($AWS_ACCESS_KEY_ID)")
	fs.StringVar(&c.creds.SecretAccessKey, "secret-access-key", env("AWS_SECRET_ACCESS_KEY"), "secret access key ($AWS_SECRET_ACCESS_KEY)")
	c.creds.SessionToken = env("AWS_SESSION_TOKEN")
	return c
}

// placeholderKey signs the requests of hoist admin when no access key is
// given: a Hoist without configured credentials accepts any signature.
var placeholderKey = aws.Credentials{AccessKeyID: "hoist-admin", SecretAccessKey: "hoist-admin"}

// call POSTs the action with in as its JSON body and decodes the answer
// into out (nil to ignore it).
func (c *adminClient) call(ctx context.Context, action string, in, out any) error {
	creds := c.creds
	if creds.AccessKeyID == "" && creds.SecretAccessKey == "" {
		creds = placeholderKey
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return errors.New("an access key needs both its ID and its secret: set --access-key-id and --secret-access-key, or $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY")
	}
	err := c.post(ctx, creds, action, in, out)
	var refused *authError
	if errors.As(err, &refused) && creds == placeholderKey {
		return fmt.Errorf("%w (this Hoist verifies signatures: set $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, or --access-key-id and --secret-access-key, to a key it accepts)", err)
	}
	return err
}

// authError is Hoist's refusal of a request's signature or key.
type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

// post sends the signed request and reads its answer.
func (c *adminClient) post(ctx context.Context, creds aws.Credentials, action string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	url := strings.TrimRight(c.endpoint, "/") + "/hoist/admin/" + action
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "gamelift", c.region, c.now()); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &e) == nil && e.Type != "" {
			msg := e.Type + ": " + e.Message
			switch e.Type {
			case sigv4.CodeUnrecognizedClient, sigv4.CodeInvalidSignature, sigv4.CodeMissingAuthenticationToken:
				return &authError{msg}
			}
			return errors.New(msg)
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func setInstanceStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin set-instance-status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	group := fs.String("group", "", "game server group name or ARN (required)")
	instance := fs.String("instance", "", "instance ID (required)")
	status := fs.String("status", "", "ACTIVE, DRAINING or SPOT_TERMINATING (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *group == "" || *instance == "" || *status == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "hoist admin set-instance-status: --group, --instance and --status are required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := map[string]string{"GameServerGroupName": *group, "InstanceId": *instance, "InstanceStatus": *status}
	if err := c.call(ctx, "SetGameServerInstanceStatus", in, nil); err != nil {
		fmt.Fprintln(stderr, "hoist admin:", err)
		return 1
	}
	fmt.Fprintf(stdout, "instance %s of %s is now %s\n", *instance, *group, *status)
	return 0
}

func sendTestEvent(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin send-test-event", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	resource := fs.String("resource", "", "ARN the event is about, e.g. a queue's (required)")
	topic := fs.String("topic", "", "SNS topic ARN whose webhooks (--webhooks) receive it")
	message := fs.String("message", "", "text put in the event's detail")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *resource == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "hoist admin send-test-event: --resource is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out struct{ EventId string }
	in := map[string]string{"Resource": *resource, "Topic": *topic, "Message": *message}
	if err := c.call(ctx, "SendTestEvent", in, &out); err != nil {
		fmt.Fprintln(stderr, "hoist admin:", err)
		return 1
	}
	fmt.Fprintf(stdout, "published event %s\n", out.EventId)
	return 0
}
