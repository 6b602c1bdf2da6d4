// A request held by the CDP Fetch domain, in the shape the rest of the extension uses, and its conversion to
// a protocol Request for the helper.
import type { Protocol } from "devtools-protocol";
import { withoutFragment } from "./origin-of.js";
import type { Priority, Request as HelperRequest, ResourceType } from "../generated/protocol.js";

export interface PausedRequest {
  /** CDP interception id (Fetch.RequestId). */
  interceptionId: string;
  url: string;
  method: string;
  /** Header fields as [name, value] pairs, in the order CDP gave them. */
  headers: [string, string][];
  /** CDP resource type as sent (e.g. "Image", "XHR"). */
  cdpResourceType: string;
  priority: string;
  frameId: string;
  hasBody: boolean;
  /** The browser's network request id (CDP Network requestId), when it has one. */
  networkId?: string;
}

export function fromRequestPaused(event: Protocol.Fetch.RequestPausedEvent): PausedRequest {
  const headers: [string, string][] = [];
  for (const [name, value] of Object.entries(event.request.headers)) {
    // CDP joins repeated fields with "\n": give them back as repeated pairs.
    for (const part of value.split("\n")) headers.push([name, part]);
  }
  return {
    interceptionId: event.requestId,
    url: event.request.url + (event.request.urlFragment ?? ""),
    method: event.request.method,
    headers,
    cdpResourceType: event.resourceType,
    priority: event.request.initialPriority,
    frameId: event.frameId,
    hasBody: event.request.hasPostData === true,
    ...(event.networkId ? { networkId: event.networkId } : {}),
  };
}

const RESOURCE_TYPES: ReadonlySet<string> = new Set<ResourceType>([
  "document", "stylesheet", "script", "font", "image", "media", "xhr", "fetch", "manifest", "ping", "texttrack",
  "eventsource", "websocket", "prefetch", "preflight", "signedexchange", "cspviolationreport", "other",
]);
const PRIORITIES: ReadonlySet<string> = new Set<Priority>(["VeryHigh", "High", "Medium", "Low", "VeryLow"]);

export function resourceTypeOf(cdpType: string): ResourceType {
  const lower = cdpType.toLowerCase();
  return RESOURCE_TYPES.has(lower) ? (lower as ResourceType) : "other";
}

export function headerValue(headers: readonly (readonly [string, string])[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

export function toHelperRequest(id: string, paused: PausedRequest): HelperRequest {
  const request: HelperRequest = {
    id,
    method: paused.method,
    url: withoutFragment(paused.url), // what goes on the wire
    headers: paused.headers.map(([n, v]) => [n, v]),
    resource_type: resourceTypeOf(paused.cdpResourceType),
    decode: true,
  };
  if (PRIORITIES.has(paused.priority)) request.priority = paused.priority as Priority;
  return request;
}
