// Fetch.fulfillRequest parameters from the helper's response: the origin server's real status and header fields,
// minus what no longer describes the (decoded, complete) body. Never adds CORS or cookie fields. Chromium frames a
// fulfilled body by the bytes given, never by a field: Content-Length stays with a body delivered as the server coded
// it (the page reads it, as from the browser's own fetch; the assembler fulfils only such a body that is exactly that
// long), and goes with a decoded one (the helper drops it then: the coded length is not the body's).
// A body the helper passed through (decoded, yet its Content-Encoding left: a coding Chromium does not undo, whose
// body Chromium shows as it came, stream/decoding_sink.py) keeps that field and its Content-Length, as the page
// reads them from the browser's own fetch; the browser never decodes a fulfilled body.
import type { Protocol } from "devtools-protocol";
import type { Head } from "../generated/protocol.js";
import { encode } from "./base64-concat.js";

/** Fields that describe the transfer, not the response: the body handed to the browser is identity and whole. */
const DROPPED = new Set([
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "trailer",
  "upgrade",
]);

/** The page's statusText is the status line's phrase as Chromium reads it: its bytes one character each (latin-1),
 * spaces trimmed; the browser's own fetch of an answer without a phrase (every HTTP/2 answer, an HTTP/1.1 line that
 * ends after its code) reads "". Chromium refuses a fulfil whose phrase is empty, or absent for a code it has no
 * phrase of its own for (419, 520, …): such an answer is given " ", which the status line's parser trims to that "".
 * The phrase is protocol text, which Chromium writes as UTF-8, and the helper reads a phrase's bytes as latin-1: bytes
 * that are UTF-8 go as the text they spell, so the line carries the server's own bytes (given as they were read, each
 * byte above 0x7f became two); other bytes cannot be given as they came and go as read. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function phraseOf(head: Head): string {
  const reason = head.reason;
  if (reason === "") return " ";
  if (!/[\u0080-\u00ff]/.test(reason) || /[\u0100-\uffff]/.test(reason)) return reason;
  const bytes = new Uint8Array(reason.length);
  for (let i = 0; i < reason.length; i++) bytes[i] = reason.charCodeAt(i);
  try {
    return UTF8.decode(bytes);
  } catch {
    return reason;
  }
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

/** Did the helper deliver the body as it came, Chromium not undoing its coding (decoded, its Content-Encoding
 * left)? */
export function passedThrough(head: Head): boolean {
  return head.decoded && head.headers.some(([name]) => name.toLowerCase() === "content-encoding");
}

export function fulfillParams(
  interceptionId: string,
  head: Head,
  bodyBase64: string,
): Protocol.Fetch.FulfillRequestRequest {
  const responseHeaders: Protocol.Fetch.HeaderEntry[] = [];
  const passed = passedThrough(head);
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (passed && (lower === "content-encoding" || lower === "content-length")) {
      responseHeaders.push({ name, value });
      continue;
    }
    if (DROPPED.has(lower) || (lower === "content-length" && head.decoded)) continue;
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
