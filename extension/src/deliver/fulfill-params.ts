// Fetch.fulfillRequest parameters from the helper's response: the origin server's real status and header fields,
// minus what no longer describes the (decoded, complete) body. Never adds CORS or cookie fields.
import type { Protocol } from "devtools-protocol";
import type { Head } from "../generated/protocol.js";

/** Fields that describe the transfer, not the response: the body handed to the browser is identity and whole. */
const DROPPED = new Set([
  "content-encoding",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "trailer",
  "upgrade",
]);

export function fulfillParams(
  interceptionId: string,
  head: Head,
  bodyBase64: string,
): Protocol.Fetch.FulfillRequestRequest {
  const responseHeaders: Protocol.Fetch.HeaderEntry[] = [];
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (DROPPED.has(lower)) continue;
    responseHeaders.push({ name, value });
  }
  const params: Protocol.Fetch.FulfillRequestRequest = {
    requestId: interceptionId,
    responseCode: head.status,
    responseHeaders,
    body: bodyBase64,
  };
  if (head.reason) params.responsePhrase = head.reason;
  return params;
}
