"""Holds every AWS call the stack's functions made to their execution roles' policies.

scripts/stack-test runs the stack on the IAM-enforcing emulator instance (ministack-iam,
started by scripts/emulator.sh with AUTH=true and VITALS_AWS_CALL_LOG=1), so each
function logs one line per AWS SDK operation (tracing target `vitals::aws_call`, fields
`service`, `operation`, `resources`: a JSON array of {"table": T[, "index": I]},
{"stream_arn": A}, {"stream_name": N}, {"queue_url": U}, {"secret_id": S}). This script:

  record  (--stack NAME --record FILE) reads, through the emulator's APIs with the
          operator's root credentials, each function's log (its CloudWatch Logs group),
          its execution role and that role's effective policies (iam list/get role
          policies, as deployed from deploy/template.json), writes them all to FILE, then
          checks them as `--replay FILE` does;
  replay  (--replay FILE) evaluates each recorded call, as IAM action(s) and resource
          ARN(s), against its function's role policies with ministack's own evaluator
          (ministack.core.iam_evaluator) and fails on any call the policies do not allow,
          naming the function, the action and the resource; it also fails when a
          function named by --exercised logged no call at all (the call log is missing,
          so the check would prove nothing) and on any AccessDenied in a function's log;
  --deny ROLE ACTION
          evaluates as if ACTION were removed from ROLE (its logical id in the template,
          e.g. NutritionProjectorRole, or its physical name): offline, on the recorded calls;
  --template FILE
          evaluates the recorded calls against the role policies of another version of the
          template (e.g. `git show HEAD:deploy/template.json`), its Ref/Fn::GetAtt/Fn::Sub
          resolved with the recorded stack's parameters and resources: offline;
  --self-test ROLE ACTION
          shows the check can fail: evaluates once as deployed and once with ACTION
          removed from ROLE, and passes only if exactly that role's recorded calls of
          ACTION turn from allowed to denied (if none of them was allowed as deployed, it
          removes another action that was, and says so).

Output: one line per function (calls, distinct action/resource pairs, denied), a line per
denial, and `iam: N calls of M functions checked, D denied`. Exit status 0 only if
nothing was denied and nothing is missing (for --self-test: only if the check caught it).
"""

import argparse
import copy
import glob
import json
import os
import re
import sys
import time
import urllib.parse
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ministack's evaluator, from the emulator's venv (importing it pulls in no server code).
for site in sorted(glob.glob(os.path.join(ROOT, ".emulator/venv-ministack/lib/python*/site-packages"))):
    sys.path.append(site)
try:
    from ministack.core.iam_evaluator import EvalContext, evaluate, parse_policy_document
except ImportError as error:
    sys.exit(f"iam: cannot import ministack's IAM evaluator ({error}); "
             "run scripts/emulator.sh start ministack-iam once to install it")

CALL_TARGET = "vitals::aws_call"

# The SDK's service names (either spelling) -> IAM service prefixes.
SERVICE_PREFIXES = {
    "dynamodb": "dynamodb", "dynamodbstreams": "dynamodb", "kinesis": "kinesis",
    "sqs": "sqs", "secretsmanager": "secretsmanager", "sts": "sts", "s3": "s3",
    "sns": "sns", "lambda": "lambda", "cloudwatchlogs": "logs", "logs": "logs",
    "cloudwatch": "cloudwatch", "eventbridge": "events", "kms": "kms",
}

# DynamoDB transactions are not IAM actions: each item is authorized as the single-item
# action it performs (as AWS, and ministack, do).
TRANSACT_ITEM_ACTIONS = {
    "put": "dynamodb:PutItem", "update": "dynamodb:UpdateItem", "delete": "dynamodb:DeleteItem",
    "conditioncheck": "dynamodb:ConditionCheckItem", "get": "dynamodb:GetItem",
}
TRANSACT_DEFAULT = {
    "TransactWriteItems": ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                           "dynamodb:ConditionCheckItem"],
    "TransactGetItems": ["dynamodb:GetItem"],
}


def say(message):
    print(f"iam: {message}", flush=True)


# ---------------------------------------------------------------------------
# Reading the call log
# ---------------------------------------------------------------------------

TEXT_CALL = re.compile(r"vitals::aws_call\S*:?\s.*?service=\"?(?P<service>[^\"\s]+(?: [A-Z][a-z]+)*)\"?"
                       r".*?operation=\"?(?P<operation>[A-Za-z]+)\"?.*?resources=(?P<resources>\S.*)$")


def parse_call(line):
    """A `vitals::aws_call` log line -> {service, operation, resources}, else None."""
    text = line.strip()
    if CALL_TARGET not in text:
        return None
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            return None
        if document.get("target") != CALL_TARGET:
            return None
        fields = dict(document.get("fields") or {})
        for key in ("service", "operation", "resources"):  # flattened JSON, just in case
            if key not in fields and key in document:
                fields[key] = document[key]
    else:  # the text format: `... vitals::aws_call: service="DynamoDB" operation=... resources=[...]`
        found = TEXT_CALL.search(text)
        if not found:
            return None
        fields = found.groupdict()
    resources = fields.get("resources", "[]")
    if isinstance(resources, str):
        raw = resources.strip()
        if raw.startswith('"'):  # Debug-formatted string
            try:
                raw = json.loads(raw)
            except ValueError:
                pass
        try:
            resources = json.loads(raw) if raw else []
        except ValueError:
            resources = [{"unparsed": raw}]
    if isinstance(resources, dict):
        resources = [resources]
    if not fields.get("service") or not fields.get("operation"):
        return None
    return {"service": str(fields["service"]), "operation": str(fields["operation"]),
            "resources": [r for r in resources if isinstance(r, dict)]}


DENIED = re.compile(r"AccessDenied(Exception)?|not authorized to perform")


# ---------------------------------------------------------------------------
# Calls -> (actions, resource ARN) checks
# ---------------------------------------------------------------------------

def service_prefix(service):
    key = re.sub(r"[^a-z0-9]", "", service.lower())
    return SERVICE_PREFIXES.get(key, key)


def queue_arn(url, region, account):
    """An SQS queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME, or an emulator's
    http://host:port/ACCOUNT/NAME) -> arn:aws:sqs:REGION:ACCOUNT:NAME."""
    parts = [p for p in urllib.parse.urlparse(url).path.split("/") if p]
    if len(parts) >= 2:
        account = parts[-2] if re.fullmatch(r"\d{12}", parts[-2]) else account
    host = urllib.parse.urlparse(url).hostname or ""
    found = re.match(r"sqs\.([a-z0-9-]+)\.", host)
    return f"arn:aws:sqs:{found.group(1) if found else region}:{account}:{parts[-1] if parts else '*'}"


def resource_arn(prefix, resource, region, account, secrets):
    """One entry of a call's `resources` -> its ARN (None if it names nothing known)."""
    if resource.get("arn"):
        return resource["arn"]
    if "table" in resource:
        table = resource["table"]
        arn = table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{table}"
        return f"{arn}/index/{resource['index']}" if resource.get("index") else arn
    if resource.get("stream_arn"):
        return resource["stream_arn"]
    if resource.get("stream_name"):
        return f"arn:aws:{prefix}:{region}:{account}:stream/{resource['stream_name']}"
    if resource.get("queue_arn"):
        return resource["queue_arn"]
    if resource.get("queue_url"):
        return queue_arn(resource["queue_url"], region, account)
    if resource.get("secret_id"):
        secret = resource["secret_id"]
        if secret.startswith("arn:"):
            return secret
        # AWS evaluates against the stored ARN (with its random suffix): looked up when recorded.
        return secrets.get(secret) or f"arn:aws:secretsmanager:{region}:{account}:secret:{secret}"
    return None


def checks_of(call, region, account, secrets):
    """A call -> [(actions, resource ARN)]: allowed if ANY of `actions` is allowed on it.
    Usually one action; a transaction item that does not say what it does may be any of
    the single-item actions (allowed if the role may do one of them on that table)."""
    prefix = service_prefix(call["service"])
    operation = call["operation"]
    resources = call["resources"] or [{}]
    checks = []
    for resource in resources:
        arn = resource_arn(prefix, resource, region, account, secrets) or "*"
        if prefix == "dynamodb" and operation in TRANSACT_DEFAULT:
            kind = str(resource.get("action") or resource.get("op") or resource.get("kind") or "")
            kind = re.sub(r"item$", "", kind.lower())
            actions = [TRANSACT_ITEM_ACTIONS[kind]] if kind in TRANSACT_ITEM_ACTIONS \
                else TRANSACT_DEFAULT[operation]
        else:
            actions = [f"{prefix}:{operation}"]
        checks.append((tuple(actions), arn))
    return checks


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------

def allowed(function, statements, action, arn, region, account):
    context = EvalContext(
        principal_arn=f"arn:aws:sts::{account}:assumed-role/{function['role_name']}/{function['name']}",
        principal_type="AssumedRole", principal_account=account, action=action,
        resource_arn=arn, region=region, source_ip="127.0.0.1", secure_transport=True)
    return evaluate(context, statements).decision == "Allow"


def evaluate_record(record, policies_of=None):
    """Evaluates every recorded call. `policies_of(function)` gives the policy documents
    (default: the recorded ones). Returns (per-function stats, denials, allowed pairs)."""
    region, account, secrets = record["region"], record["account"], record.get("secrets", {})
    stats, denials, allowed_pairs = {}, [], set()
    for function in record["functions"]:
        documents = policies_of(function) if policies_of else function["policies"]
        statements = [s for s in (parse_policy_document(d) for d in documents) if s]
        counted = Counter()
        for call in function["calls"]:
            for check in checks_of(call, region, account, secrets):
                counted[check] += 1
        denied = 0
        for (actions, arn), count in sorted(counted.items()):
            if any(allowed(function, statements, a, arn, region, account) for a in actions):
                allowed_pairs.update((function["name"], a, arn) for a in actions
                                     if allowed(function, statements, a, arn, region, account))
                continue
            denied += count
            denials.append({"function": function["name"], "logical": function["logical"],
                            "role": function["role_logical"] or function["role_name"],
                            "actions": actions, "resource": arn, "calls": count})
        stats[function["name"]] = {"calls": len(function["calls"]), "pairs": len(counted),
                                   "denied": denied}
    return stats, denials, allowed_pairs


def denial_line(denial):
    action = denial["actions"][0] if len(denial["actions"]) == 1 else \
        "one of " + "|".join(denial["actions"])
    plural = "s" if denial["calls"] != 1 else ""
    return (f"DENIED {denial['function']} ({denial['logical']}): {action} on {denial['resource']} "
            f"({denial['calls']} call{plural}); not allowed by role {denial['role']}")


def report(record, stats, denials, exercised, quiet=False):
    """Prints the per-function lines, the denials and the summary; returns the failures."""
    failures = []
    for function in record["functions"]:
        s = stats[function["name"]]
        if not quiet:
            say(f"{function['name']} ({function['logical']}, role {function['role_logical']}): "
                f"{s['calls']} calls, {s['pairs']} distinct action/resource pairs, {s['denied']} denied")
    for denial in denials:
        say(denial_line(denial))
        failures.append(denial_line(denial))
    by_logical = {f["logical"]: f for f in record["functions"]}
    for logical in exercised:
        function = by_logical.get(logical)
        if function is None:
            failures.append(f"{logical}: no such function in the stack")
            say(f"MISSING: {logical} is not a function of the stack")
        elif not function["calls"]:
            message = (f"MISSING: {function['name']} ({logical}) logged no {CALL_TARGET} line although "
                       "the flow exercised it: the call log is missing, so the check proves nothing "
                       "(is VITALS_AWS_CALL_LOG=1 reaching the functions, and does the build log calls?)")
            say(message)
            failures.append(message)
    for function in record["functions"]:
        for line in function.get("access_denied", []):
            message = f"ACCESS DENIED in the log of {function['name']} ({function['logical']}): {line[:400]}"
            say(message)
            failures.append(message)
    calls = sum(s["calls"] for s in stats.values())
    with_calls = sum(1 for s in stats.values() if s["calls"])
    denied = sum(s["denied"] for s in stats.values())
    say(f"{calls} calls of {len(record['functions'])} functions checked, {denied} denied "
        f"({with_calls} of the functions logged calls)")
    return failures


# ---------------------------------------------------------------------------
# --deny: the policies with one action removed from one role
# ---------------------------------------------------------------------------

def matches_role(function, role):
    return role in (function["role_logical"], function["role_name"])


def without_action(documents, action):
    """The documents with `action` removed from every Allow statement: dropped from
    Action lists (a statement left with none is dropped), added to NotAction lists. An
    Action wildcard that covers it cannot be narrowed: an explicit Deny is added."""
    from ministack.core.iam_evaluator import fnmatch_iam
    changed = []
    needs_deny = False
    for document in documents:
        document = copy.deepcopy(json.loads(document) if isinstance(document, str) else document)
        statements = document.get("Statement", [])
        statements = [statements] if isinstance(statements, dict) else statements
        kept = []
        for statement in statements:
            if statement.get("Effect") == "Allow":
                if "Action" in statement:
                    listed = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                    rest = [a for a in listed if a.lower() != action.lower()]
                    if any(fnmatch_iam(action, a) for a in rest):
                        needs_deny = True
                    if not rest:
                        continue
                    statement["Action"] = rest
                elif "NotAction" in statement:
                    listed = statement["NotAction"] if isinstance(statement["NotAction"], list) else [statement["NotAction"]]
                    statement["NotAction"] = listed + [action]
            kept.append(statement)
        document["Statement"] = kept
        changed.append(document)
    if needs_deny:
        changed.append({"Version": "2012-10-17", "Statement": [
            {"Sid": "SelfTestDeny", "Effect": "Deny", "Action": action, "Resource": "*"}]})
    return changed


def policies_without(role, action):
    return lambda function: (without_action(function["policies"], action)
                             if matches_role(function, role) else function["policies"])


# ---------------------------------------------------------------------------
# --template: the policies of another version of the template
# ---------------------------------------------------------------------------

def resolver(record):
    """Resolves the intrinsic functions of a role policy as the recorded stack was deployed."""
    region, account, stack = record["region"], record["account"], record["stack"]
    values = {"AWS::Region": region, "AWS::AccountId": account, "AWS::Partition": "aws",
              "AWS::StackName": stack, "AWS::URLSuffix": "amazonaws.com", **record.get("parameters", {})}
    resources = record.get("resources", {})

    def ref(name):
        if name in values:
            return values[name]
        found = resources.get(name)
        if found is None:
            raise KeyError(f"Ref {name}: not a parameter or resource of the recorded stack")
        # Ref of a secret is its ARN (on AWS), of anything else here its physical id.
        return found["arn"] if found["type"] == "AWS::SecretsManager::Secret" else found["physical"]

    def get_att(name, attribute):
        found = resources.get(name)
        if found is None or attribute != "Arn" or not found.get("arn"):
            raise KeyError(f"Fn::GetAtt {name}.{attribute}: unknown in the recorded stack")
        return found["arn"]

    def resolve(value):
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"}:
            return ref(value["Ref"])
        if set(value) == {"Fn::GetAtt"}:
            name, attribute = value["Fn::GetAtt"] if isinstance(value["Fn::GetAtt"], list) \
                else value["Fn::GetAtt"].split(".", 1)
            return get_att(name, attribute)
        if set(value) == {"Fn::Sub"}:
            text, extra = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]
            extra = {k: resolve(v) for k, v in extra.items()}

            def one(found):
                name = found.group(1)
                if name in extra:
                    return extra[name]
                return get_att(*name.split(".", 1)) if "." in name else ref(name)
            return re.sub(r"\$\{([^}!]+)\}", one, text)
        if set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(resolve(parts))
        return {k: resolve(v) for k, v in value.items()}
    return resolve


def template_policies(record, path):
    """policies_of(function) from the role policies of the template at `path`."""
    template = json.load(open(path))["Resources"]
    resolve = resolver(record)

    def policies_of(function):
        role = template.get(function["role_logical"])
        if not role or role["Type"] != "AWS::IAM::Role":
            say(f"note: {function['role_logical']} is not a role of {path}: no policies")
            return []
        return [resolve(policy["PolicyDocument"]) for policy in role["Properties"].get("Policies", [])]
    return policies_of


def self_test(record, role, action):
    """Evaluates as deployed and with `action` removed from `role`: passes only if that
    role's allowed calls of the action, and nothing else, become denied."""
    _, base, allowed_pairs = evaluate_record(record)
    roles = {f["role_logical"] for f in record["functions"]} | {f["role_name"] for f in record["functions"]}
    if role not in roles:
        say(f"self-test FAILED: no function of the stack has role {role}")
        return 1
    targets = {(n, a) for n, a, _ in allowed_pairs}

    def holders(r, a):
        return {f["name"] for f in record["functions"] if matches_role(f, r) and (f["name"], a) in targets}

    if not holders(role, action):
        # The requested action was never allowed (denied as deployed, or the path that
        # makes the call was not exercised): removing it shows nothing, so the self-test
        # would prove nothing. That is a failure, never a quiet switch to another action.
        say(f"self-test FAILED: no call of {action} by {role} was allowed as deployed (denied by "
            f"the template itself, or the flow did not exercise it): removing it can show nothing")
        return 1
    say(f"self-test: evaluating the {sum(len(f['calls']) for f in record['functions'])} recorded calls "
        f"again with {action} removed from {role} (offline)")
    stats, mutated, _ = evaluate_record(record, policies_without(role, action))
    key = lambda d: (d["function"], d["actions"], d["resource"])
    base_keys = {key(d) for d in base}
    new = [d for d in mutated if key(d) not in base_keys]
    for denial in new:
        say(denial_line(denial))
    expected = {(n, a, arn) for n, a, arn in allowed_pairs if a == action and n in holders(role, action)}
    caught = {(d["function"], a, d["resource"]) for d in new for a in d["actions"]}
    stray = [d for d in new if action not in d["actions"] or not matches_role(
        next(f for f in record["functions"] if f["name"] == d["function"]), role)]
    lost = {key(d) for d in base} - {key(d) for d in mutated}
    if new and expected <= caught and not stray and not lost:
        say(f"self-test passed: with {action} removed from {role}, the check reports "
            f"{sum(d['calls'] for d in new)} call(s) denied ({len(new)} action/resource pair(s)) "
            f"and nothing else changed")
        return 0
    say(f"self-test FAILED: removing {action} from {role} should deny {sorted(expected)}; "
        f"newly denied {[key(d) for d in new]}, unrelated {[key(d) for d in stray]}, "
        f"no longer denied {sorted(lost)}")
    return 1


# ---------------------------------------------------------------------------
# Recording from the emulator
# ---------------------------------------------------------------------------

def policy_document(raw):
    if isinstance(raw, str):
        raw = json.loads(urllib.parse.unquote(raw) if raw.lstrip().startswith("%") else raw)
    return raw


def record_stack(stack_name, settle=1.5):
    import boto3

    cfn, lam, iam, logs = (boto3.client(s) for s in ("cloudformation", "lambda", "iam", "logs"))
    sm = boto3.client("secretsmanager")
    resources = []
    paging = {}
    while True:
        page = cfn.list_stack_resources(StackName=stack_name, **paging)
        resources += page["StackResourceSummaries"]
        if not page.get("NextToken"):
            break
        paging = {"NextToken": page["NextToken"]}
    role_logical = {r["PhysicalResourceId"]: r["LogicalResourceId"] for r in resources
                    if r["ResourceType"] == "AWS::IAM::Role"}
    functions = sorted((r["LogicalResourceId"], r["PhysicalResourceId"]) for r in resources
                       if r["ResourceType"] == "AWS::Lambda::Function")

    def messages(name):
        found, paging = [], {}
        while True:
            try:
                page = logs.filter_log_events(logGroupName=f"/aws/lambda/{name}", **paging)
            except logs.exceptions.ResourceNotFoundException:
                return found
            found += [e["message"] for e in page.get("events", [])]
            if not page.get("nextToken"):
                return found
            paging = {"nextToken": page["nextToken"]}

    # The last lines of a function may reach its log group a moment after it answered.
    counts = None
    deadline = time.monotonic() + 10
    while True:
        lines = {name: messages(name) for _, name in functions}
        now = {name: len(found) for name, found in lines.items()}
        if now == counts or time.monotonic() > deadline:
            break
        counts = now
        time.sleep(settle)

    region = account = None
    recorded = []
    for logical, name in functions:
        config = lam.get_function_configuration(FunctionName=name)
        _, _, _, region, account, _ = config["FunctionArn"].split(":", 5)
        role_name = config["Role"].rsplit("/", 1)[-1]
        policies = []
        for policy in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
            policies.append(policy_document(
                iam.get_role_policy(RoleName=role_name, PolicyName=policy)["PolicyDocument"]))
        for attached in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]:
            version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
            policies.append(policy_document(iam.get_policy_version(
                PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"]))
        calls = [c for c in (parse_call(m) for m in lines[name]) if c]
        denied = [m.strip() for m in lines[name] if DENIED.search(m) and CALL_TARGET not in m]
        recorded.append({"logical": logical, "name": name, "role_name": role_name,
                         "role_logical": role_logical.get(role_name, ""), "policies": policies,
                         "calls": calls, "access_denied": denied, "log": lines[name]})
    secrets = {}
    for function in recorded:
        for call in function["calls"]:
            for resource in call["resources"]:
                secret = resource.get("secret_id")
                if secret and not secret.startswith("arn:") and secret not in secrets:
                    try:
                        secrets[secret] = sm.describe_secret(SecretId=secret)["ARN"]
                    except Exception as error:  # reported by the evaluation as a name-derived ARN
                        say(f"note: secret {secret} not found ({error.__class__.__name__})")
    region, account = region or "us-east-1", account or "000000000000"
    # What --template needs to resolve another template's policies as this stack was deployed.
    parameters = {p["ParameterKey"]: p.get("ResolvedValue", p["ParameterValue"])
                  for p in cfn.describe_stacks(StackName=stack_name)["Stacks"][0].get("Parameters", [])}
    arn_of = {
        "AWS::DynamoDB::Table": lambda p: f"arn:aws:dynamodb:{region}:{account}:table/{p}",
        "AWS::Kinesis::Stream": lambda p: f"arn:aws:kinesis:{region}:{account}:stream/{p}",
        "AWS::SQS::Queue": lambda p: queue_arn(p, region, account) if "/" in p
        else f"arn:aws:sqs:{region}:{account}:{p}",
        "AWS::SecretsManager::Secret": lambda p: p if p.startswith("arn:")
        else sm.describe_secret(SecretId=p)["ARN"],
        "AWS::IAM::Role": lambda p: f"arn:aws:iam::{account}:role/{p}",
        "AWS::Lambda::Function": lambda p: f"arn:aws:lambda:{region}:{account}:function:{p}",
        "AWS::Logs::LogGroup": lambda p: f"arn:aws:logs:{region}:{account}:log-group:{p}:*",
    }
    stack_resources = {r["LogicalResourceId"]: {
        "type": r["ResourceType"], "physical": r.get("PhysicalResourceId", ""),
        "arn": arn_of[r["ResourceType"]](r["PhysicalResourceId"]) if r["ResourceType"] in arn_of else None}
        for r in resources}
    return {"stack": stack_name, "region": region, "account": account, "parameters": parameters,
            "resources": stack_resources, "secrets": secrets, "functions": recorded}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="record the calls of this stack's functions (with --record FILE)")
    source.add_argument("--replay", metavar="FILE", help="evaluate a recorded FILE again (offline)")
    parser.add_argument("--record", metavar="FILE", help="where --stack writes what it read")
    parser.add_argument("--exercised", default="QueryApi",
                        help="comma-separated logical ids of functions that must have logged calls")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--template", metavar="FILE",
                      help="evaluate against the role policies of this template instead")
    mode.add_argument("--deny", nargs=2, metavar=("ROLE", "ACTION"),
                      help="evaluate with ACTION removed from ROLE")
    mode.add_argument("--self-test", nargs=2, metavar=("ROLE", "ACTION"),
                      help="pass only if removing ACTION from ROLE makes the check report its calls")
    args = parser.parse_args()

    if args.stack:
        if not args.record:
            parser.error("--stack needs --record FILE")
        record = record_stack(args.stack)
        os.makedirs(os.path.dirname(os.path.abspath(args.record)), exist_ok=True)
        with open(args.record, "w") as out:
            json.dump(record, out, indent=1)
        say(f"recorded the calls and role policies of {len(record['functions'])} functions "
            f"of {args.stack} in {os.path.relpath(args.record)}")
    else:
        record = json.load(open(args.replay))

    if args.self_test:
        return self_test(record, *args.self_test)
    policies_of = None
    if args.deny:
        say(f"evaluating with {args.deny[1]} removed from {args.deny[0]} (offline)")
        policies_of = policies_without(*args.deny)
    if args.template:
        say(f"evaluating against the role policies of {args.template} (offline)")
        policies_of = template_policies(record, args.template)
    stats, denials, _ = evaluate_record(record, policies_of)
    exercised = [e for e in args.exercised.split(",") if e]
    failures = report(record, stats, denials, exercised)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
