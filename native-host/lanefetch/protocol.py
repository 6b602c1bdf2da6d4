"""The helper side of the protocol defined once in shared/protocol.schema.json (shipped with the
package as protocol.schema.json): validation of what arrives, builders for what leaves."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import fastjsonschema

from . import __version__
from .cache.store import StoreStats
from .engine import DeliveredHead, FetchError, FetchRequest, TimingReport
from .engine.timing import epoch_ms

if TYPE_CHECKING:
    import jsonschema

    from .lanes.interface_report import PolicyAnswer
    from .prefetch.flight import FlightReport
    from .proxy.ca_sites import SyncResult
    from .proxy.response_tally import DeliveredResponse

PROTOCOL_VERSION = 1
CAPABILITIES = ["pipelining", "decode", "cache", "split", "interfaces", "browser_warm", "browser_fetched",
                "browser_fields", "browser_document", "invalidate"]

Message = dict[str, Any]


@cache
def schema() -> dict[str, Any]:
    text = resources.files("lanefetch").joinpath("protocol.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def identity() -> dict[str, str]:
    text = resources.files("lanefetch").joinpath("identity.json").read_text(encoding="utf-8")
    data: dict[str, str] = json.loads(text)
    return data


@cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    import jsonschema  # only to word why a message was refused (~0.1 s of start-up otherwise)

    root = schema()
    sub = {"$schema": root["$schema"], "$defs": root["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(sub)


@cache
def _fast_accept(definition: str) -> Callable[[Any], Any]:
    """The same schema compiled to Python (fastjsonschema): accepting a 77-request batch takes ~2 ms instead of
    jsonschema's ~60 ms, which every batch used to wait for. Compiling takes ~0.1 s: `warm_up` does it early."""
    root = schema()
    validate: Callable[[Any], Any] = fastjsonschema.compile({"$defs": root["$defs"], "$ref": f"#/$defs/{definition}"})
    return validate


def warm_up() -> None:
    """Compile the validator of what the browser sends (the helper calls this right after hello)."""
    _fast_accept("ToHost")


# Errors looked at to word a reason: a message can hold hundreds of thousands (one per bad header), and
# collecting them all took 11 s for an 850 kB batch, with the host deaf meanwhile.
_REASON_ERRORS = 100


@cache
def _definition_of_type(definition: str) -> dict[str, str]:
    """For a oneOf of message definitions (ToHost, ToExtension): each message type's own definition."""
    defs = schema()["$defs"]
    found: dict[str, str] = {}
    for option in defs[definition].get("oneOf", []):
        name = option["$ref"].removeprefix("#/$defs/")
        const = defs[name].get("properties", {}).get("type", {}).get("const")
        if isinstance(const, str):
            found[const] = name
    return found


def valid(message: Any, definition: str) -> bool:
    """Whether message is a valid `definition`, without the reason (fast: no jsonschema)."""
    try:
        _fast_accept(definition)(message)
        return True
    except fastjsonschema.JsonSchemaException:
        return False


def check(message: Any, definition: str) -> str | None:
    """None if message is a valid `definition` (e.g. "ToHost"), else a short reason. The compiled validator
    accepts valid messages fast; what it rejects goes to jsonschema (the reference) for the reason: checked
    against its own type's definition (a oneOf would collect every error of every option at once), and only
    its first errors are looked at."""
    try:
        _fast_accept(definition)(message)
        return None
    except fastjsonschema.JsonSchemaException:
        pass
    kind = message.get("type") if isinstance(message, dict) else None
    own = _definition_of_type(definition).get(kind) if isinstance(kind, str) else None
    errors: list[jsonschema.ValidationError] = []
    for name in dict.fromkeys([own or definition, definition]):  # the whole definition if its own type's found none
        first = itertools.islice(_validator(name).iter_errors(message), _REASON_ERRORS)
        errors = sorted(first, key=lambda e: len(list(e.absolute_path)))
        if errors:
            break
    if not errors:
        return None
    from jsonschema.exceptions import best_match

    best = best_match(errors)
    where = "/".join(str(p) for p in best.absolute_path) or "message"
    return f"{where}: {best.message[:300]}"


def hello(extension_protocol: int, proxy_secret: str | None = None, system_proxy: str | None = None,
          wpad: str | None = None) -> Message:
    compatible = extension_protocol == PROTOCOL_VERSION
    msg: Message = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "helper_version": __version__,
        "compatible": compatible,
        "capabilities": CAPABILITIES if compatible else [],
    }
    if compatible and proxy_secret is not None:
        msg["capabilities"] = [*CAPABILITIES, "proxy", "https_sites", "proxy_pages"]
        msg["proxy_secret"] = proxy_secret
    if compatible and system_proxy:
        msg["system_proxy"] = system_proxy
    if compatible and wpad:
        msg["wpad"] = wpad
    if not compatible:
        said = (f"This extension speaks protocol {extension_protocol}; the installed helper (lanefetch {__version__}) "
                f"speaks protocol {PROTOCOL_VERSION}.")
        if extension_protocol > PROTOCOL_VERSION:
            msg["message"] = f"{said} Update the helper: pipx upgrade lanefetch, then lanefetch install."
        else:
            msg["message"] = (f"{said} Update the extension from your browser's add-on store, or install the "
                              f"lanefetch helper release that speaks protocol {extension_protocol}.")
    return msg


def system_proxy(where: str | None, wpad: str | None = None) -> Message:
    msg: Message = {"type": "system_proxy"}
    if where:
        msg["system_proxy"] = where
    if wpad:
        msg["wpad"] = wpad
    return msg


def head(rid: str, h: DeliveredHead) -> Message:
    return {
        "type": "head", "id": rid, "status": h.status, "reason": h.reason, "http_version": h.http_version,
        "headers": [[k, v] for k, v in h.headers], "decoded": h.decoded,
    }


def body(rid: str, data: bytes) -> Message:
    return {"type": "body", "id": rid, "data": base64.b64encode(data).decode("ascii")}


def end(rid: str, body_bytes: int, trailers: list[tuple[str, str]]) -> Message:
    msg: Message = {"type": "end", "id": rid, "body_bytes": body_bytes}
    if trailers:
        msg["trailers"] = [[k, v] for k, v in trailers]
    return msg


def error(code: str, message: str, rid: str | None = None) -> Message:
    msg: Message = {"type": "error", "code": code, "message": message[:4000]}
    if rid is not None:
        msg["id"] = rid
    return msg


def request_error(rid: str, e: FetchError) -> Message:
    return error(e.code, e.message, rid)


def timing(rid: str, report: TimingReport, response: DeliveredResponse | None = None) -> Message:
    """`response`: proxy mode only, what the helper wrote to the browser (Firefox shows the extension no head)."""
    conn = report.connection
    msg: Message = {
        "type": "timing",
        "id": rid,
        "timing": report.timing.as_epoch_ms(),
        "connection": None if conn is None else asdict(conn),
        "retries": report.retries,
        "wire_bytes": report.wire_bytes,
        "cache": report.cache,
        **({"lanes": [asdict(lane) for lane in report.lanes]} if report.lanes is not None else {}),
    }
    if response is not None:
        msg["response"] = {
            "status": response.status, "headers": [[k, v] for k, v in response.headers],
            "body_bytes": response.body_bytes, "decoded_body_bytes": response.decoded_body_bytes,
        }
    return msg


def page_report(page: str, top_site: str, recorded: int, flight: FlightReport | None,
                request: str | None = None) -> Message:
    """A page load ended: how many of its requests were recorded, what its prefetch flight did (counts only when
    it had one), and its first request's id (by which the extension finds the load)."""
    msg: Message = {"type": "page_report", "page": page, "top_site": top_site, "recorded": recorded,
                    "flight": flight is not None}
    if request is not None:
        msg["request"] = request
    if flight is not None:
        msg.update(planned=flight.planned, sent=flight.sent, answered=flight.answered,
                   refused_by_budget=flight.refused_by_budget, cancelled_by_budget=flight.cancelled_by_budget,
                   refused_by_fidelity=dict(flight.refused_by_fidelity), claimed_bytes=flight.claimed_bytes,
                   wasted_bytes=flight.wasted_bytes)
    return msg


def proxy_ready(context_id: str, port: int, split_port: int) -> Message:
    return {"type": "proxy_ready", "context_id": context_id, "host": "127.0.0.1", "port": port,
            "split_port": split_port}


def proxied(context_id: str, request: FetchRequest) -> Message:
    # The request's header fields as Firefox sent them (less the proxy's own credentials, never in request.headers):
    # the extension's record of a proxied request has no other source for them.
    msg: Message = {"type": "proxied", "id": request.id, "context_id": context_id, "method": request.method,
                    "url": request.url, "resource_type": request.resource_type,
                    "request_headers": [[k, v] for k, v in request.headers]}
    if request.priority is not None:
        msg["priority"] = request.priority
    return msg


def origin_rtt(origin: str, rtt_s: float, remembered: bool = False) -> Message:
    msg: Message = {"type": "origin_rtt", "origin": origin, "rtt_ms": round(max(0.0, rtt_s) * 1000.0, 3)}
    if remembered:
        msg["remembered"] = True
    return msg


def flight_plan(url: str, flight: bool) -> Message:
    return {"type": "flight_plan", "url": url, "flight": flight}


def working(batch_id: str) -> Message:
    return {"type": "working", "batch_id": batch_id}


def batch_done(batch_id: str, connections: int, max_concurrent: int) -> Message:
    return {"type": "batch_done", "batch_id": batch_id, "connections": connections,
            "max_concurrent_connections": max_concurrent}


def cache_stats(nonce: str | None, persistent: StoreStats | None, private: StoreStats,
                cleared: int | None = None) -> Message:
    msg: Message = {
        "type": "cache_stats",
        "entries": persistent.entries if persistent else 0, "bytes": persistent.bytes if persistent else 0,
        "location": persistent.location if persistent else None,
        "private_entries": private.entries, "private_bytes": private.bytes,
    }
    if cleared is not None:
        msg["cleared"] = cleared
    if nonce is not None:
        msg["nonce"] = nonce
    return msg


def cache_error(nonce: str | None, reason: str) -> Message:
    msg: Message = {"type": "cache_stats", "error": reason[:4000]}
    if nonce is not None:
        msg["nonce"] = nonce
    return msg


def interfaces_state(nonce: str | None, answer: PolicyAnswer) -> Message:
    msg: Message = {"type": "interfaces_state"}
    rows, error = answer.rows, answer.error
    if rows is not None:
        msg["policy_file"] = answer.policy_file[:4000]
        msg["interfaces"] = [{
            "name": r.name, "present": r.present, "up": r.up, "addresses": list(r.addresses[:64]),
            "enabled": r.policy.enabled, "weight": r.policy.weight, "metered": r.policy.metered,
            "daily_cap_bytes": r.policy.daily_cap_bytes, "bytes_today": r.bytes_today, "why_not": r.why_not,
            "binding": r.binding,
        } for r in rows[:256]]
    if error is not None:
        msg["error"] = error[:4000]
    if nonce is not None:
        msg["nonce"] = nonce
    return msg


def https_state(nonce: str | None, result: SyncResult) -> Message:
    msg: Message = {
        "type": "https_state", "profiles": [str(p) for p in result.profiles][:64], "which": result.which[:4000],
        "sites": [{"scope": s.site.scope, "name": s.site.name, "state": s.state,
                   **({"expires": int(s.expires * 1000)} if s.expires is not None else {}),
                   **({"detail": s.detail[:4000]} if s.detail else {})} for s in result.sites],
    }
    if nonce is not None:
        msg["nonce"] = nonce
    return msg


def https_state_error(nonce: str | None, reason: str) -> Message:
    """An https_state that cannot tell the sites' state (its answer did not fit the browser's port): empty, with why.
    The extension then counts no site active (their https requests go direct) rather than keep an older state."""
    msg: Message = {"type": "https_state", "profiles": [], "which": "", "sites": [], "error": reason[:4000]}
    if nonce is not None:
        msg["nonce"] = nonce
    return msg


__all__ = ["CAPABILITIES", "PROTOCOL_VERSION", "check", "epoch_ms", "identity", "schema"]
