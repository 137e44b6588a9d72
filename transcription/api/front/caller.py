"""Who calls (`Caller`) and what a door may call (`Operation`): the two types every door and the
front door share. Apart from front_door.py so that operations.py can declare its operations
without importing the front door that runs them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from accounts.models import Account
from transcription.api.front import ratelimit

# The doors, as a Caller names them (for logs and for the rules a door may bend: docs/decisions.md).
REST = "rest"
MCP = "mcp"
WEBSITE = "website"
UPLOADS = "uploads"
OPENAI = "openai"
REALTIME = "realtime"


@dataclass
class Caller:
    """Who calls (the account, its login, the token's digest or None for a signed-in session) and
    from where (the client's address as the limits count it, the door). Built once per request;
    `rate` is the request's count in its account's window, set by front_door.admit."""

    account_id: int
    user_id: int
    token_digest: str | None
    address: str
    transport: str
    rate: ratelimit.RateState | None = field(default=None, compare=False)

    @cached_property
    def account(self) -> Account:
        """The caller's account, read once (polls need only `account_id`, which costs nothing)."""
        return Account.objects.select_related("user").get(pk=self.account_id)


# What an operation answers: the contract's object, a list (list_voices), or nothing (a 204).
ResponseBody = dict[str, Any] | list[dict[str, Any]] | None


@dataclass(frozen=True)
class Operation:
    """Something a door may ask of the front door: `run(caller, arguments, request)` answers the
    contract's response body; `bucket` is what it counts as (a job request or a poll)."""

    name: str
    bucket: str
    run: Callable[[Caller, dict, Any], ResponseBody]

    def __call__(self, caller: Caller, arguments: dict, request: Any = None) -> ResponseBody:
        return self.run(caller, arguments, request)


def operation(bucket: str) -> Callable[[Callable[[Caller, dict, Any], ResponseBody]], Operation]:
    """Declare an operation of operations.py (its name is the function's, the MCP tool's too)."""

    def declare(run: Callable[[Caller, dict, Any], ResponseBody]) -> Operation:
        return Operation(run.__name__, bucket, run)

    return declare
