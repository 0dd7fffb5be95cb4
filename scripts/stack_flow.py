"""The mobile app's flow against the generated stack, created on the emulator by
scripts/stack-test. Everything goes through the deployed parts: the HTTP API (API
Gateway v2 in front of the api function), the stream consumer functions that the
event source mappings invoke, their on-failure queues, and the `vitals` operator
commands an operator would run (redrive-failures, admin residue).

Steps (each waits on a condition with a deadline, never a fixed sleep):
  1. fill what the emulator's CloudFormation leaves out, with the equivalent API calls
     (listed in the output and in the README);
  2. cold start and warm latency of the api function (GET /healthz), every function
     having the package's code and the API reporting its build;
  3. register, log meals, the dashboard converges (projections by the consumers);
  4. a poison event (a MealLogged of a newer release) is dead-lettered by every
     subscription that consumes MealLogged, and meals logged after it still project;
  5. an outage of the dashboard projector (a release that cannot reach its store): the
     batch is reported failed, its description goes to the on-failure queue, and
     `vitals redrive-failures dashboard` brings the meal to the dashboard;
  6. the account is deleted and `vitals admin residue` finds nothing of it.
With --redeployed (after a stack update with a changed package): only that every
function has the new package's code and the API answers with its build, then a
rotation of the token signing key that signs no one out. With --restored-from (a stack
made from another's tables restored from point-in-time recovery): the replay of its
read models, and a sign-in of the other stack's account through it.
Exit status 0 only when every step held.
"""

import argparse
import base64
import hashlib
import io
import datetime
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile

import boto3

CONVERGE_WITHIN = 90.0


def say(message):
    print(f"stack-test: {message}", flush=True)


def fail(message):
    say(f"FAILED: {message}")
    sys.exit(1)


def wait_for(what, probe, within=CONVERGE_WITHIN):
    """Calls `probe` until it returns something truthy, at most `within` seconds."""
    deadline = time.monotonic() + within
    pause = 0.05
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"timed out after {within:.0f} s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def new_ulid():
    """A ULID (48-bit milliseconds, 80 random bits, Crockford base32), as event ids are."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(26)))


class Api:
    """The phone's side: JSON over HTTP through the API Gateway endpoint."""

    def __init__(self, base):
        self.base = base
        self.token = None
        self.last_headers = {}

    def call(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        if self.token:
            request.add_header("authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
                self.last_headers = dict(response.headers)
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
            self.last_headers = dict(error.headers)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")


class Stack:
    def __init__(self, name, prefix, endpoint, vitals):
        self.name, self.prefix, self.endpoint, self.vitals = name, prefix, endpoint, vitals
        self.cfn = boto3.client("cloudformation")
        self.ddb = boto3.client("dynamodb")
        self.kinesis = boto3.client("kinesis")
        self.sqs = boto3.client("sqs")
        self.awslambda = boto3.client("lambda")
        self.logs = boto3.client("logs")
        self.iam = boto3.client("iam")
        self.secrets = boto3.client("secretsmanager")
        self.template = json.load(open("deploy/template.json"))

    def physical(self, logical):
        detail = self.cfn.describe_stack_resource(StackName=self.name, LogicalResourceId=logical)
        return detail["StackResourceDetail"]["PhysicalResourceId"]

    def output(self, key):
        stack = self.cfn.describe_stacks(StackName=self.name)["Stacks"][0]
        return next(o["OutputValue"] for o in stack["Outputs"] if o["OutputKey"] == key)

    def run_vitals(self, *args):
        command = [self.vitals, *args, "--endpoint-url", self.endpoint, "--table-prefix", self.prefix]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    def tables(self):
        for logical, resource in self.template["Resources"].items():
            if resource["Type"] == "AWS::DynamoDB::Table":
                yield logical, resource["Properties"]

    # 1. What the emulator's CloudFormation does not apply.
    def fill_emulator_gaps(self):
        filled = set()
        for logical, props in self.tables():
            table = self.physical(logical)
            spec = props.get("KinesisStreamSpecification")
            if spec:
                stream = self.physical(spec["StreamArn"]["Fn::GetAtt"][0])
                summary = self.kinesis.describe_stream_summary(StreamName=stream)[
                    "StreamDescriptionSummary"]
                arn = summary["StreamARN"]
                # The template's default: provisioned streams of StreamShards shards.
                shards = self.template["Parameters"]["StreamShards"]["Default"]
                mode = summary["StreamModeDetails"]["StreamMode"]
                if (mode, summary["OpenShardCount"]) != ("PROVISIONED", shards):
                    raise SystemExit(f"{stream}: {mode} with {summary['OpenShardCount']} shards, "
                                     f"expected PROVISIONED with {shards}")

                def destination_status():
                    found = self.ddb.describe_kinesis_streaming_destination(TableName=table)
                    return next((d["DestinationStatus"] for d in found["KinesisDataStreamDestinations"]
                                 if d["StreamArn"] == arn), None)

                if destination_status() not in ("ACTIVE", "ENABLING"):
                    self.ddb.enable_kinesis_streaming_destination(TableName=table, StreamArn=arn)
                    filled.add("KinesisStreamSpecification (EnableKinesisStreamingDestination)")
                wait_for(f"{table} streaming to {stream}", lambda: destination_status() == "ACTIVE")
            ttl = props.get("TimeToLiveSpecification")
            if ttl:
                status = self.ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
                if status.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
                    self.ddb.update_time_to_live(TableName=table, TimeToLiveSpecification=ttl)
                    filled.add("TimeToLiveSpecification (UpdateTimeToLive)")
            if props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled"):
                backups = self.ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
                if backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] != "ENABLED":
                    self.ddb.update_continuous_backups(
                        TableName=table,
                        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
                    filled.add("PointInTimeRecoverySpecification (UpdateContinuousBackups)")
        filled |= self.secret_refs_as_arns()
        say("emulator gaps filled by API calls: " + (", ".join(sorted(filled)) or "none"))

    def secret_refs_as_arns(self):
        """`Ref` of an AWS::SecretsManager::Secret is its ARN on AWS; the emulator's
        CloudFormation gives its name. Where the template says `Ref` to a secret (the roles'
        OwnSecrets statements, the functions' VITALS_*_SECRET_ARN), the deployed name is
        replaced by the ARN, as AWS would have deployed it: with IAM enforced (ministack-iam),
        a policy naming the secret by name allows nothing (the request's resource is the ARN)."""
        secrets = [logical for logical, resource in self.template["Resources"].items()
                   if resource["Type"] == "AWS::SecretsManager::Secret"]
        arns = {}
        for logical in secrets:
            physical = self.physical(logical)
            if not physical.startswith("arn:"):
                arns[physical] = self.secrets.describe_secret(SecretId=physical)["ARN"]
        if not arns:
            return set()
        filled = set()

        def with_arns(value):
            if isinstance(value, str):
                return arns.get(value, value)
            if isinstance(value, list):
                return [with_arns(v) for v in value]
            if isinstance(value, dict):
                return {k: with_arns(v) for k, v in value.items()}
            return value

        for logical, resource in self.template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Role":
                role = self.physical(logical)
                for name in self.iam.list_role_policies(RoleName=role)["PolicyNames"]:
                    document = self.iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
                    if isinstance(document, str):
                        document = json.loads(document)
                    fixed = with_arns(document)
                    if fixed != document:
                        self.iam.put_role_policy(RoleName=role, PolicyName=name,
                                                 PolicyDocument=json.dumps(fixed))
                        filled.add("Ref of a secret as its ARN in role policies (PutRolePolicy)")
            elif resource["Type"] == "AWS::Lambda::Function":
                function = self.physical(logical)
                variables = self.awslambda.get_function_configuration(FunctionName=function)[
                    "Environment"]["Variables"]
                if with_arns(variables) != variables:
                    self.set_function_env(function, lambda env: env.update(with_arns(dict(env))))
                    filled.add("Ref of a secret as its ARN in function environments "
                               "(UpdateFunctionConfiguration)")
        return filled

    def log_messages(self, function):
        """What a function has logged so far (its CloudWatch Logs group)."""
        paging = {}
        while True:
            try:
                page = self.logs.filter_log_events(logGroupName=f"/aws/lambda/{function}", **paging)
            except self.logs.exceptions.ResourceNotFoundException:
                return
            for event in page.get("events", []):
                yield event["message"]
            if not page.get("nextToken"):
                return
            paging = {"nextToken": page["nextToken"]}

    def log_has(self, function, text):
        return any(text in message for message in self.log_messages(function))

    def init_ms(self, function):
        """The init phase the function logged at its (first) cold start."""
        for message in self.log_messages(function):
            found = re.search(r'init_ms"?[=:]\s*"?([0-9.]+)', message)
            if found:
                return float(found.group(1))
        return None

    def set_function_env(self, function, change):
        """A release of `function` with its environment changed: the configuration
        updated, a version published and the live alias (what its callers invoke) moved
        to it, as a deployment does."""
        config = self.awslambda.get_function_configuration(FunctionName=function)
        variables = dict(config["Environment"]["Variables"])
        change(variables)
        self.awslambda.update_function_configuration(
            FunctionName=function, Environment={"Variables": variables})
        wait_for(f"{function} updated", lambda: self.awslambda.get_function_configuration(
            FunctionName=function).get("LastUpdateStatus", "Successful") == "Successful")
        version = self.awslambda.publish_version(FunctionName=function)["Version"]
        self.awslambda.update_alias(FunctionName=function, Name="live", FunctionVersion=version)

    def stream_records(self, stream):
        """Every record of a Kinesis stream: (shard id, sequence number, decoded change)."""
        shards = self.kinesis.list_shards(StreamName=stream)["Shards"]
        for shard in shards:
            iterator = self.kinesis.get_shard_iterator(
                StreamName=stream, ShardId=shard["ShardId"],
                ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            while iterator:
                page = self.kinesis.get_records(ShardIterator=iterator, Limit=1000)
                for record in page["Records"]:
                    yield shard["ShardId"], record["SequenceNumber"], json.loads(record["Data"])
                if not page["Records"] or page.get("MillisBehindLatest", 0) == 0:
                    break
                iterator = page.get("NextShardIterator")


def projector_of(subscription):
    """The logical id of the projector function running `subscription` (the one writing
    its target's table: `dashboard-from-nutrition` runs in `DashboardProjector`)."""
    return subscription.split("-from-")[0].capitalize() + "Projector"


def subscriptions_consuming(event_type):
    """The subscriptions the events index (docs/events.md, drift-tested) says apply it."""
    for line in open("docs/events.md"):
        if line.startswith(f"| `{event_type}` |"):
            return sorted(re.findall(r"`([a-z]+-from-[a-z]+)`", line))
    fail(f"{event_type} is not in docs/events.md")


def package_identity(path):
    """What a package's functions run: the build `/healthz` reports (the first 16 hex
    digits of the bootstrap's BLAKE2b-512, as `b2sum` says) and the code digest Lambda
    reports (the zip's SHA-256, base64)."""
    data = open(path, "rb").read()
    bootstrap = zipfile.ZipFile(io.BytesIO(data)).read("bootstrap")
    build = hashlib.blake2b(bootstrap).hexdigest()[:16]
    code = base64.b64encode(hashlib.sha256(data).digest()).decode()
    return build, code


def check_runs(stack, api, package):
    """Every function of the stack has the package's code, and the API answers with its
    build (the first request after a deploy is served by the new code)."""
    build, code = package_identity(package)
    functions = [r["PhysicalResourceId"] for r in
                 stack.cfn.describe_stack_resources(StackName=stack.name)["StackResources"]
                 if r["ResourceType"] == "AWS::Lambda::Function"]
    stale = [f for f in functions
             if stack.awslambda.get_function(FunctionName=f)["Configuration"]["CodeSha256"] != code]
    if stale:
        fail(f"{len(stale)} of {len(functions)} functions do not have the package's code: {stale}")
    # What callers invoke: each function's live alias, a published version of that code.
    behind = []
    for function in functions:
        version = stack.awslambda.get_alias(FunctionName=function, Name="live")["FunctionVersion"]
        published = stack.awslambda.get_function(FunctionName=function, Qualifier=version)["Configuration"]
        if version == "$LATEST" or published["CodeSha256"] != code:
            behind.append(f"{function}:{version}")
    if behind:
        fail(f"live aliases not on a published version of the package: {behind}")
    status, health = api.call("GET", "/healthz")
    if status != 200 or health.get("build") != build:
        fail(f"GET /healthz answers {status} {health}, not the package's build {build}")
    versions = sorted({stack.awslambda.get_alias(FunctionName=f, Name="live")["FunctionVersion"] for f in functions})
    say(f"all {len(functions)} functions have the package's code ({code[:12]}...), their live "
        f"aliases on version {', '.join(versions)}, and GET /healthz reports its build {build}")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_like(token, key):
    """`token`'s claims signed with `key` as the API signs (HS256, the key's id as `kid`:
    the first 16 hex digits of SHA-256 over a label and the key)."""
    import hmac
    payload = token.split(".")[1]
    kid = hashlib.sha256(b"vitals token key id\0" + key).hexdigest()[:16]
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


def check_key_rotation(stack, api):
    """The operator rotates the token signing key in Secrets Manager (one
    put-secret-value); no one is signed out: a token of the old key still holds (the
    AWSPREVIOUS stage), one of the new key holds at once on the warm functions (a kid
    they do not hold makes them read the secret again), one of a key nobody holds is
    refused."""
    email = f"rotation-{secrets.token_hex(4)}@example.com"
    status, reply = api.call("POST", "/v1/auth/register", {
        "email": email, "password": "correct horse battery", "display_name": "Rui", "timezone": "UTC"})
    if status != 201:
        fail(f"register before the rotation: {status} {reply}")
    old = reply["access_token"]

    def profile(token):
        caller = Api(api.base)
        caller.token = token
        return caller.call("GET", "/v1/me/profile")[0]

    # The profile is a read model: it answers 404 until its projection lands (seen once
    # in CI under load), so the rotation starts from an account whose profile is there.
    wait_for("the new account's profile", lambda: profile(old) == 200)
    # Who the restore check signs in as, once the stack is restored elsewhere.
    os.makedirs("target/stack-test", exist_ok=True)
    with open(f"target/stack-test/rotation-{stack.name}.json", "w") as account:
        json.dump({"email": email, "user": reply["user_id"]}, account)
    new_key = secrets.token_hex(32).encode()
    stack.secrets.put_secret_value(SecretId=f"{stack.prefix}jwt-signing-key", SecretString=new_key.decode())
    outcomes = {"old key": profile(old), "new key": profile(signed_like(old, new_key)),
                "a key nobody holds": profile(signed_like(old, secrets.token_hex(32).encode()))}
    if outcomes != {"old key": 200, "new key": 200, "a key nobody holds": 401}:
        fail(f"after rotating the signing key, GET /v1/me/profile answered {outcomes}")
    say(f"signing key rotated in Secrets Manager: GET /v1/me/profile with a token of {outcomes}")


def check_restored(stack, api, restored_from):
    """The stack restored from point-in-time recovery: its streams attached again (the
    emulator's gaps filled as on creation), the read models replayed from the restored
    outboxes, and the account made on the original stack signs in through the new API
    and finds its profile and its dashboard."""
    stack.fill_emulator_gaps()
    replayed = stack.run_vitals("replay", "all", "--backend", "dynamodb")
    if replayed.returncode != 0:
        fail(f"vitals replay all on the restored tables: {replayed.stderr[-2000:]}")
    account = json.load(open(f"target/stack-test/rotation-{restored_from}.json"))
    status, reply = api.call("POST", "/v1/auth/login", {"email": account["email"],
                                                        "password": "correct horse battery"})
    if status != 200 or reply.get("user_id") != account["user"]:
        fail(f"signing in on the restored stack: {status} {reply}")
    api.token = reply["access_token"]
    status, profile = api.call("GET", "/v1/me/profile")
    if status != 200 or profile.get("display_name") != "Rui":
        fail(f"the profile on the restored stack: {status} {profile}")
    day = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    home = wait_for("the restored dashboard", lambda: (r := api.call("GET", f"/v1/me/dashboard?date={day}"))[0] == 200 and r)
    say(f"restored from point-in-time recovery into {stack.name}: replayed, {account['email']} signed in "
        f"and read the profile and the dashboard ({home[0]})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stack", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--vitals", required=True)
    parser.add_argument("--package", required=True, help="the zip the stack was deployed from")
    parser.add_argument("--redeployed", action="store_true",
                        help="only check that the stack, just updated, runs --package")
    parser.add_argument("--restored-from", help="only check the stack restored from this one's tables")
    args = parser.parse_args()
    stack = Stack(args.stack, args.prefix, args.endpoint, args.vitals)
    if args.restored_from:
        api = Api(f"{args.endpoint}/_aws/execute-api/{stack.output('HttpApiId')}/$default")
        check_restored(stack, api, args.restored_from)
        return
    if args.redeployed:
        api = Api(f"{args.endpoint}/_aws/execute-api/{stack.output('HttpApiId')}/$default")
        check_runs(stack, api, args.package)
        check_key_rotation(stack, api)
        return
    counts = {}
    for resource in stack.cfn.describe_stack_resources(StackName=args.stack)["StackResources"]:
        if resource["ResourceStatus"] != "CREATE_COMPLETE":
            fail(f"{resource['LogicalResourceId']} is {resource['ResourceStatus']}")
        kind = resource["ResourceType"]
        counts[kind] = counts.get(kind, 0) + 1
    say(f"stack {args.stack}: {sum(counts.values())} resources created: "
        + ", ".join(f"{n} {k.split('::', 1)[1]}" for k, n in sorted(counts.items())))
    stack.fill_emulator_gaps()

    api_id = stack.output("HttpApiId")
    api = Api(f"{args.endpoint}/_aws/execute-api/{api_id}/$default")

    # 2. The query api function's cold start, then its warm latency, on the same route.
    started = time.monotonic()
    status, health = api.call("GET", "/healthz")
    cold_ms = (time.monotonic() - started) * 1000
    if status != 200:
        fail(f"GET /healthz through API Gateway: {status} {health}")
    check_runs(stack, api, args.package)
    warm = []
    for _ in range(9):
        started = time.monotonic()
        api.call("GET", "/healthz")
        warm.append((time.monotonic() - started) * 1000)
    warm.sort()
    query_api = stack.physical("QueryApi")
    init = wait_for("the query api function's init_ms in its log", lambda: stack.init_ms(query_api))
    say(f"query api function (GET /healthz's): cold start: init {init:.1f} ms (configuration, clients, both secrets "
        f"read), first request {cold_ms:.0f} ms; warm median {warm[4]:.0f} ms "
        f"(GET /healthz through API Gateway: {health})")

    # 3. Register, log meals, the dashboard converges.
    day = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)).date().isoformat()
    email = f"ana-{secrets.token_hex(4)}@example.com"
    password = "correct horse battery"
    status, reply = api.call("POST", "/v1/auth/register", {
        "email": email, "password": password, "display_name": "Ana", "timezone": "UTC"})
    if status != 201:
        fail(f"register: {status} {reply}")
    user, api.token = reply["user_id"], reply["access_token"]
    status, reply = Api(api.base).call("POST", "/v1/auth/register", {
        "email": email, "password": "another password entirely", "display_name": "Eve", "timezone": "UTC"})
    if status != 409 or "access_token" in json.dumps(reply):
        fail(f"a second sign-up with her email and another password got {status} {reply}")

    def log_meal(name, calories, hour):
        status, meal = api.call("POST", "/v1/me/meals", {
            "name": name, "eaten_at": f"{day}T{hour:02}:00:00.000Z", "calories": str(calories),
            "protein_g": "20", "carbs_g": "30", "fat_g": "10"}, {"idempotency-key": new_ulid()})
        if status != 201:
            fail(f"log meal {name}: {status} {meal}")
        return meal["meal_id"]

    def recent_meals():
        status, home = api.call("GET", f"/v1/me/dashboard?date={day}")
        if status != 200:
            fail(f"dashboard: {status} {home}")
        return {m["meal_id"] for m in home.get("recent_meals", [])}

    started = time.monotonic()
    logged = {log_meal("Oats", 420, 8)}
    request_id = {k.lower(): v for k, v in api.last_headers.items()}.get("x-request-id")
    logged.add(log_meal("Soup", 380, 12))
    wait_for("both meals on the dashboard", lambda: logged <= recent_meals())
    say(f"register, 2 meals: on the dashboard {(time.monotonic() - started) * 1000:.0f} ms after the first POST")

    # Every context's API function, each under its own role (the IAM check below holds
    # each to it): a workout, a night, a goal, the weather, a wearable's connect.
    yesterday = datetime.date.fromisoformat(day)
    for method, path, body, expected in [
        ("POST", "/v1/me/workouts", {"sport": "run", "started_at": f"{day}T06:00:00.000Z",
                                     "duration_s": 2400, "distance_m": 8000}, 201),
        ("POST", "/v1/me/sleep", {"start": f"{(yesterday - datetime.timedelta(days=1)).isoformat()}T22:40:00.000Z",
                                  "end": f"{day}T06:50:00.000Z", "score": 81}, 201),
        ("POST", "/v1/me/goals", {"kind": "daily_protein_grams", "target": "100", "title": "Protein"}, 201),
        ("GET", "/v1/me/environment?geohash=u09tv", None, 200),
        ("POST", "/v1/integrations/sandbox/connect", None, 200),
    ]:
        headers = {"idempotency-key": new_ulid()} if body else None
        status, reply = api.call(method, path, body, headers)
        if status != expected:
            fail(f"{method} {path}: {status} {reply} (expected {expected})")
    say("a workout, a night, a goal, the weather and a wearable's connect, each through its "
        "context's API function")

    # The first meal's request id, in the JSON lines of the api function (its access
    # line) and of the projectors applying MealLogged (each subscription's apply of it).
    if not request_id:
        fail(f"no x-request-id in the answer to POST /v1/me/meals: {api.last_headers}")
    meal_consumers = subscriptions_consuming("MealLogged")
    meal_projectors = sorted({projector_of(s) for s in meal_consumers})

    def lines_with(function):
        return [json.loads(m) for m in stack.log_messages(function)
                if request_id in m and m.lstrip().startswith("{")]

    def followed():
        access = [l for l in lines_with(stack.physical("NutritionApi")) if l.get("target") == "vitals::access"]
        applied = sorted(span.get("subscription") for p in meal_projectors for l in lines_with(stack.physical(p))
                         if l.get("fields", {}).get("message") == "event applied"
                         for span in l.get("spans", []) if span.get("correlation_id") == request_id
                         and span.get("subscription") in meal_consumers)
        return access and applied == meal_consumers and (access, applied)

    access, applied = wait_for(f"request {request_id} in the functions' logs", followed)

    # Each batch's metrics, as Embedded Metric Format lines of the projectors' logs.
    def measured():
        documents = [json.loads(m) for p in meal_projectors for m in stack.log_messages(stack.physical(p))
                     if m.lstrip().startswith("{") and '"_aws"' in m]
        return {d.get("subscription") for d in documents
                if d["_aws"].get("CloudWatchMetrics")} >= set(meal_consumers) and documents

    documents = wait_for("EMF documents in the meal projectors' logs", measured)
    say(f"{', '.join(meal_projectors)}: {len(documents)} EMF documents, e.g. "
        + json.dumps({k: v for k, v in documents[-1].items() if k != "_aws"}))
    say(f"request {request_id}: access line {access[0]['fields']}; applied by {', '.join(applied)} "
        f"in {', '.join(meal_projectors)}, under that correlation id")

    # The nightly job, as its EventBridge schedule invokes it (the emulator does not
    # wait for the hour): a Scheduled Event, answered with what it did for each ended
    # day; invoked again, it finds those days finished (their checkpoints) and does nothing.
    nightly = stack.physical("NightlyFunction")
    schedule = stack.cfn.describe_stack_resource(StackName=args.stack, LogicalResourceId="NightlySchedule")[
        "StackResourceDetail"]["PhysicalResourceId"]

    def invoke_nightly():
        invoked = stack.awslambda.invoke(FunctionName=nightly, Payload=json.dumps({
            "version": "0", "id": new_ulid(), "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "000000000000", "time": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"), "region": "us-east-1", "resources": [schedule], "detail": {}}))
        answer = json.loads(invoked["Payload"].read())
        if invoked.get("FunctionError") or not isinstance(answer.get("runs"), list):
            fail(f"the nightly function answered {invoked.get('FunctionError')} {answer}")
        return answer["runs"]

    # (The emulator fires the hourly rule too: a run of its own may have come first, and
    # this one then finds the days finished.)
    runs = invoke_nightly()
    if not all(re.fullmatch(r"\d{4}-\d\d-\d\d", str(r.get("day"))) and isinstance(r.get("scored"), int)
               and r.get("finished") is True for r in runs):
        fail(f"the nightly function's run did not finish the ended days: {runs}")
    again = invoke_nightly()
    if again:
        fail(f"the nightly function scored finished days again: {again}")
    checkpoints = stack.ddb.query(
        TableName=stack.physical("InsightsTable"), KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "JOB#readiness"}}, ConsistentRead=True)["Items"]
    finished = sorted(c["sk"]["S"] for c in checkpoints if c.get("finished", {}).get("BOOL"))
    if len(finished) < 2:
        fail(f"the nightly job's checkpoints are not the two ended days, finished: {checkpoints}")
    say(f"nightly function on a Scheduled Event: {runs}; invoked again: {again}; finished: {finished}")

    # 4. A poison event: a MealLogged that a newer release wrote (version 99).
    nutrition = stack.physical("NutritionTable")
    outbox = stack.ddb.query(
        TableName=nutrition, KeyConditionExpression="pk = :pk AND begins_with(sk, :evt)",
        ExpressionAttributeValues={":pk": {"S": f"USER#{user}"}, ":evt": {"S": "EVT#"}})["Items"]
    poison = next(i for i in outbox if i["event_type"]["S"] == "MealLogged")
    poison_id = new_ulid()
    poison["sk"] = {"S": f"EVT#{poison_id}"}
    poison["envelope"]["M"]["event_id"] = {"S": poison_id}
    poison["envelope"]["M"]["schema_version"] = {"N": "99"}
    stack.ddb.put_item(TableName=nutrition, Item=poison)
    after_poison = log_meal("Apple", 95, 15)
    wait_for("the meal logged after the poison on the dashboard", lambda: after_poison in recent_meals())
    consumers = subscriptions_consuming("MealLogged")

    def letters_of_poison():
        found = []
        for subscription in consumers:
            table = stack.physical(subscription.split("-from-")[0].capitalize() + "Table")
            letters = stack.ddb.query(
                TableName=table, KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"DLQ#{subscription}"}},
                ConsistentRead=True)["Items"]
            if any(poison_id in json.dumps(letter) for letter in letters):
                found.append(subscription)
        return found == consumers

    wait_for("the poison dead-lettered by every consumer of MealLogged", letters_of_poison)
    say(f"poison MealLogged v99: dead-lettered once by each of {', '.join(consumers)}; "
        "the meal logged after it projected")

    # 5. An outage of the dashboard projector: a release that cannot reach its store.
    consumer = stack.physical("DashboardProjector")
    stack.set_function_env(consumer, lambda env: env.update(VITALS_ENDPOINT_URL="http://127.0.0.1:9"))
    lost = log_meal("Pasta", 610, 19)
    wait_for("the dashboard projector to report the batch failed",
             lambda: stack.log_has(consumer, "record neither applied nor dead-lettered"),
             within=180)
    if lost in recent_meals():
        fail("the meal logged during the outage reached the dashboard without a redrive")
    stack.set_function_env(consumer, lambda env: env.pop("VITALS_ENDPOINT_URL"))
    stream = stack.physical("NutritionStream")
    stream_arn = stack.kinesis.describe_stream_summary(StreamName=stream)[
        "StreamDescriptionSummary"]["StreamARN"]
    failed = [(shard, sequence) for shard, sequence, change in stack.stream_records(stream)
              if change.get("dynamodb", {}).get("Keys", {}).get("sk", {}).get("S", "").startswith("EVT#")
              and lost in json.dumps(change["dynamodb"].get("NewImage", {}))]
    if len(failed) != 1:
        fail(f"expected one outbox record of the lost meal in {stream}, found {failed}")
    shard, sequence = failed[0]
    # What Lambda sends to the on-failure destination once the retries are spent (the
    # emulator's Kinesis mappings have no on-failure destination: see the README).
    queue = stack.sqs.get_queue_url(QueueName=stack.physical("DashboardProjectorFailures").rsplit("/", 1)[-1])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    stack.sqs.send_message(QueueUrl=queue["QueueUrl"], MessageBody=json.dumps({
        "requestContext": {"requestId": new_ulid(), "condition": "RetryAttemptsExhausted",
                           "functionArn": stack.awslambda.get_function(FunctionName=consumer)[
                               "Configuration"]["FunctionArn"], "approximateInvokeCount": 6},
        "responseContext": {"statusCode": 200, "executedVersion": "live", "functionError": ""},
        "version": "1.0", "timestamp": now,
        "KinesisBatchInfo": {"shardId": shard, "startSequenceNumber": sequence,
                             "endSequenceNumber": sequence, "approximateArrivalOfFirstRecord": now,
                             "approximateArrivalOfLastRecord": now, "batchSize": 1,
                             "streamArn": stream_arn}}))
    redriven = stack.run_vitals("redrive-failures", "dashboard")
    if redriven.returncode != 0 or "1 batches redriven (1 records)" not in redriven.stdout:
        fail(f"vitals redrive-failures dashboard: {redriven.returncode} {redriven.stdout} {redriven.stderr}")
    if lost not in recent_meals():
        fail("the redriven meal is not on the dashboard")
    left = stack.sqs.get_queue_attributes(QueueUrl=queue["QueueUrl"], AttributeNames=["ApproximateNumberOfMessages"])
    if left["Attributes"]["ApproximateNumberOfMessages"] != "0":
        fail(f"the on-failure queue still holds {left['Attributes']}")
    say(f"outage of {consumer}: batch failed, described in the on-failure queue, "
        f"redriven from {shard} ({redriven.stdout.strip()}); the meal is on the dashboard")

    # 6. Account deletion: nothing of her is left anywhere (first, residue must see her).
    before = stack.run_vitals("admin", "residue", user, "--backend", "dynamodb")
    if before.returncode == 0 or "nothing left" in before.stdout:
        fail(f"vitals admin residue finds nothing of a live account: {before.stdout} {before.stderr}")
    # It takes her password: a wrong one (a stolen token's guess) deletes nothing.
    status, reply = api.call("DELETE", "/v1/me", {"current_password": "a guess at it"})
    if status != 403 or (reply or {}).get("error", {}).get("code") != "wrong_password":
        fail(f"DELETE /v1/me with a wrong password: {status} {reply}")
    status, reply = api.call("DELETE", "/v1/me", {"current_password": password})
    if status != 202:
        fail(f"DELETE /v1/me: {status} {reply}")
    started = time.monotonic()
    residue = wait_for("vitals admin residue to find nothing of her",
                       lambda: (r := stack.run_vitals("admin", "residue", user, "--backend", "dynamodb"))
                       .returncode == 0 and r)
    status, _ = api.call("GET", f"/v1/me/dashboard?date={day}")
    if status != 401:
        fail(f"her token still reads the dashboard after the erasure: {status}")
    say(f"account deletion: {residue.stdout.strip()} after {(time.monotonic() - started):.1f} s")
    say("the mobile-app flow passed on the stack")


if __name__ == "__main__":
    main()
