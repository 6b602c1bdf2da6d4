// Fetch.fulfillRequest parameters from the helper's response: the origin server's real status and header fields,
// minus what no longer describes the (decoded, complete) body. Never adds CORS or cookie fields.
import type { Protocol } from "devtools-protocol";
import type { Head } from "../generated/protocol.js";
import { encode } from "./base64-concat.js";

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

/** Standard phrases (RFC 9110 and the IANA registry) for a status line without one (every HTTP/2 answer). */
const PHRASES: Readonly<Record<number, string>> = {
  200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
  205: "Reset Content", 206: "Partial Content", 207: "Multi-Status", 208: "Already Reported", 226: "IM Used",
  300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
  305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect",
  400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout",
  409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
  414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
  421: "Misdirected Request", 422: "Unprocessable Content", 423: "Locked", 424: "Failed Dependency",
  425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
  431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
  500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout", 505: "HTTP Version Not Supported", 506: "Variant Also Negotiates",
  507: "Insufficient Storage", 508: "Loop Detected", 510: "Not Extended", 511: "Network Authentication Required",
};

/** Chromium refuses a fulfil whose phrase is empty, or absent for a code it has no phrase of its own for (419,
 * 520, …): an answer without one (HTTP/2 has none) is given a standard phrase, or a neutral one. */
function phraseOf(head: Head): string {
  return head.reason.trim() !== "" ? head.reason : PHRASES[head.status] ?? "Unknown Status";
}

/** The helper reads field bytes as latin-1 (one char a byte); responseHeaders are text Chromium takes as UTF-8, so
 * a field with a byte above 0x7f goes as the bytes themselves ("name: value\0" lines), which the protocol offers for
 * values that are not UTF-8 text. Not for what cannot be such bytes, or would split a line (Chromium then refuses
 * the text fields, as it would have). */
function binaryHeaders(headers: readonly Protocol.Fetch.HeaderEntry[]): string | null {
  const text = headers.map((h) => `${h.name}: ${h.value}`);
  if (!text.some((line) => /[\u0080-\uffff]/.test(line))) return null;
  if (text.some((line) => /[\0\r\n\u0100-\uffff]/.test(line))) return null;
  const joined = text.map((line) => `${line}\0`).join("");
  const bytes = new Uint8Array(joined.length);
  for (let i = 0; i < joined.length; i++) bytes[i] = joined.charCodeAt(i);
  return encode(bytes);
}

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
  const binary = binaryHeaders(responseHeaders);
  const params: Protocol.Fetch.FulfillRequestRequest = {
    requestId: interceptionId,
    responseCode: head.status,
    ...(binary === null ? { responseHeaders } : { binaryResponseHeaders: binary }),
    body: bodyBase64,
    responsePhrase: phraseOf(head),
  };
  return params;
}
