"""schemathesis hooks for the Vitals API (loaded by scripts/fuzz-api via SCHEMATHESIS_HOOKS).

Two hooks:
- `before_call`: every generated request that carries a well-formed `Idempotency-Key` gets
  a key of its own. schemathesis draws header values independently of bodies, so it sends
  the same key (often "0") with different bodies; the API then answers 422
  `idempotency_key_reused`, as the IETF Idempotency-Key draft asks, and schemathesis would
  call that a rejection of valid data. A generated request is a new attempt, not a retry,
  so it gets a fresh key. Malformed keys (the negative cases) are left as they are: the
  API must still reject them.
- `filter_failure`: drops only "schema-valid request rejected" failures (ST202) whose 422
  `validation` answer names a field whose rule JSON Schema cannot state (RULES below,
  per operation): a cursor the server never gave out, `to` before `from`, a time more
  than a day ahead, an email change without the current password. Every other failure stands.
"""

import itertools
import json
import re

import schemathesis

HEADER = "idempotency-key"
# The key's documented shape: 1 to 128 visible ASCII characters other than `#`.
WELL_FORMED = re.compile(r'^[!-"$-~]{1,128}$')
_serial = itertools.count()


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = case.headers or {}
    for name, value in list(headers.items()):
        if name.lower() == HEADER and isinstance(value, str) and WELL_FORMED.match(value):
            suffix = f"-fz{next(_serial)}"
            headers[name] = value[: 128 - len(suffix)] + suffix


# Rules of the API that JSON Schema cannot state, by operation: a `422 validation` whose
# message names one of these fields is the API applying its documented rule to data the
# schema alone calls valid, not a rejection of valid data. Anything else is a failure.
_ANY_PAGE = {"cursor": "only a `next_cursor` the server gave out is a cursor"}
_RANGE = {"to": "not before `from`"}
RULES = {
    "GET /v1/me/meals": {**_ANY_PAGE},
    "GET /v1/me/workouts": {**_ANY_PAGE, **_RANGE},
    "GET /v1/me/sleep": {**_ANY_PAGE, **_RANGE},
    "GET /v1/me/goals": {**_ANY_PAGE},
    "GET /v1/me/goals/{id}/progress": {**_ANY_PAGE},
    "GET /v1/me/nutrition/daily": {"to": "not before `from`, at most 30 days after it"},
    "POST /v1/me/meals": {"eaten_at": "at most a day from now"},
    "PUT /v1/me/meals/{id}": {"eaten_at": "at most a day from now"},
    "POST /v1/me/workouts": {"started_at": "at most a day from now"},
    "POST /v1/me/sleep": {
        "start": "at most a day from now",
        "end": "after `start`, at most 24 hours later",
    },
    "POST /v1/me/goals": {"target": "whole for counted kinds; depends on `kind`"},
    "POST /v1/me/password": {"current_password": "must be the account's password"},
    "PATCH /v1/me/profile": {"current_password": "required with `email`"},
    "GET /v1/me/scheduled-meals": {**_ANY_PAGE, **_RANGE},
    "GET /v1/me/training-blocks": {**_ANY_PAGE},
    "GET /v1/catalog/recipes": {**_ANY_PAGE},
    "GET /v1/catalog/meal-plans": {**_ANY_PAGE},
    "POST /v1/me/scheduled-meals/{day}/{id}/eaten": {
        "eaten_at": "at most a day from now",
        "nutrients": "required unless the scheduled meal names a recipe",
    },
    "POST /v1/me/training-blocks/{start_day}/{id}/end": {
        "ended_on": "within the block",
    },
    "POST /v1/integrations/{provider}/complete": {
        "state": "a state `connect` gave the caller, unused, within 10 minutes",
        "code": "a code the provider gave",
    },
}


def _field_of(response):
    """The field a `422 validation` answer names (its message starts `field: ...`)."""
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(error, dict) or error.get("code") != "validation":
        return None
    return str(error.get("message", "")).split(":", 1)[0]


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    """Drops only ST202 failures that a documented rule of RULES explains."""
    if getattr(failure, "code", None) != "ST202" or response.status_code != 422:
        return True
    allowed = RULES.get(case.operation.label, {})
    return _field_of(response) not in allowed
