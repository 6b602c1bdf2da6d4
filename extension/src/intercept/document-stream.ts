// Chromium: the bytes of a page's document that the browser loads itself, read as its parser receives them and
// passed to the helper (protocol message browser_document), so that the helper reads what the document names while
// it arrives, as it does for a document it fetches itself.
//
// Theory of operation. A page on a private or loopback address keeps its document (pass-through-policy.ts,
// `local_document`: the browser must know its address space), so the helper never saw it and could discover nothing
// from it: a first visit to such a page gained only what pipelining gives (0.96–1.23× on `sat`, sessions 33–35).
// The DevTools protocol can hand over a response's body as it streams: `Network.streamResourceContent` on the
// request makes each later `Network.dataReceived` carry its bytes (`data`, base64, decoded of any content coding),
// and answers with what arrived before (`bufferedData`). Measured in Chromium 156 (session 36, raw CDP, a chunked
// document on loopback): the command, sent while the document's request is paused and before it is continued,
// answers only once the first bytes are in, so those first bytes come only from the resource buffer (Network.enable's
// maxResourceBufferSize: with 0, the document's first 4 kB, where its <link>s are, were lost; cdp-network-log.ts
// keeps one). A gzip document came decoded, every byte once, in order.
//
// What can go wrong is told, never hidden: the first bytes must be exactly those the browser reported before the
// answer (the sum of dataLength of the events that carried no data); a buffer that evicted them (it is shared by the
// tab's resources) makes the stream `cut`, and the helper never takes a cut stream for the whole document. A load
// that failed, a redirect (the next hop keeps the request id), a stream past MAX_STREAMED, a detached tab or one
// whose Network domain is turned off: `cut` too. The head (status, Content-Type, whether a Content-Security-Policy
// came) is sent as soon as the response is, before any byte. A small document can end before the command
// is taken, which is then refused (on loopback, 1 load in 6): its whole body is asked for once it ended
// (Network.getResponseBody, from the same buffer) and sent only if it is exactly the bytes the browser reported.
// Pure of chrome.*: the caller gives the CDP command and the message sender (chromium-main.ts), and feeds the tab's
// Network events.

import { base64ByteLength, encode } from "../deliver/base64-concat.js";
import type { BrowserDocument, Page } from "../generated/protocol.js";
import { withoutFragment } from "./origin-of.js";

/** What the helper reads of a document (native-host page_loads.MAX_TAPPED): no more is sent. */
export const MAX_STREAMED = 4 * 1024 * 1024;
/** Documents streamed at once (one per tab's navigation; a tab navigating again leaves its old one to end). */
export const MAX_STREAMS = 8;
/** Base64 characters per message (the protocol's limit for `data`, a multiple of 4). */
export const MAX_PIECE_CHARS = 999_996;

export type CdpCommand = (tabId: number, method: string, params: Record<string, unknown>) => Promise<unknown>;

interface Stream {
  tabId: number;
  id: string;
  /** The document's URL as told to the helper (no fragment): a response for another (a redirect's) is not its. */
  url: string;
  page: Page;
  status: number | null;
  contentType: string | null;
  /** The response carries a Content-Security-Policy (what the document names may be blocked). */
  policy: boolean;
  /** Bytes the browser reported before streaming was on (events without data): the answer's bufferedData holds them. */
  before: number;
  /** base64 pieces that came with data before the command's answer (sent after its bufferedData). */
  early: string[];
  answered: boolean;
  headSent: boolean;
  sent: number;
  /** The body ended (loadingFinished) before the answer came. */
  finished: boolean;
  /** The command was refused (a document that ended before it was taken): its whole body is asked for once it ended. */
  refused: boolean;
}

/** May a text body the browser gives back decoded be taken as its bytes encoded in UTF-8: its Content-Type names
 * UTF-8 or no charset (the document's own <meta charset>, or the browser's guess, chose it; the length check in
 * wholeBody then tells UTF-8 and plain ASCII, whose bytes are the same, from a single-byte or CJK encoding, whose
 * non-ASCII text grows in UTF-8)? Not where it names another charset. */
function maybeUtf8(contentType: string | null): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]?.toLowerCase();
  return charset === undefined || charset === "utf-8" || charset === "utf8";
}


function field(headers: Record<string, string> | undefined, wanted: string): string | null {
  for (const [name, value] of Object.entries(headers ?? {})) if (name.toLowerCase() === wanted) return value.split("\n")[0] ?? null;
  return null;
}

export class DocumentStreams {
  /** By the browser's network request id. */
  private readonly streams = new Map<string, Stream>();

  constructor(
    private readonly command: CdpCommand,
    private readonly send: (message: BrowserDocument) => boolean,
    /** Told how each stream ended (bytes sent; why, for a cut): for the tab trace, nothing else. */
    private readonly ended?: (id: string, end: "whole" | "cut", bytes: number, why: string) => void,
  ) {}

  get size(): number {
    return this.streams.size;
  }

  /** Stream the document `url` whose request `networkId` is paused in `tabId` (call before it is continued). `tell`
   * tells the helper of its request, as `id` (browser_fetched), once it is sure to be streamed: false from it (the
   * helper is gone) streams nothing. False: not streamed (too many under way, this one already is, or not told). */
  start(tabId: number, networkId: string, id: string, url: string, page: Page, tell: () => boolean = () => true): boolean {
    if (this.streams.has(networkId) || this.streams.size >= MAX_STREAMS || !tell()) return false;
    const stream: Stream = {
      tabId, id, url: withoutFragment(url), page, status: null, contentType: null, policy: false, before: 0, early: [], answered: false, headSent: false, sent: 0, finished: false, refused: false,
    };
    this.streams.set(networkId, stream);
    this.command(tabId, "Network.streamResourceContent", { requestId: networkId }).then(
      (reply) => this.answered(networkId, stream, (reply as { bufferedData?: unknown }).bufferedData),
      () => this.refused(networkId, stream),
    );
    return true;
  }

  /** A CDP Network event of the tab's own session. */
  handle(tabId: number, method: string, params: unknown): void {
    const requestId = (params as { requestId?: unknown }).requestId;
    if (typeof requestId !== "string") return;
    const stream = this.streams.get(requestId);
    if (stream === undefined || stream.tabId !== tabId) return;
    if (method === "Network.requestWillBeSent" && (params as { redirectResponse?: unknown }).redirectResponse !== undefined) {
      // Redirected (the next hop keeps the request id): what comes is another URL's document
      this.end(requestId, stream, "cut", "redirected");
    } else if (method === "Network.responseReceived") {
      const response = (params as { response?: { url?: string; status?: number; headers?: Record<string, string> } }).response;
      if (withoutFragment(response?.url ?? "") !== stream.url) {
        this.end(requestId, stream, "cut", "answered for another URL");
        return;
      }
      stream.status = response?.status ?? null;
      stream.contentType = field(response?.headers, "content-type")?.slice(0, 1024) ?? null;
      stream.policy = field(response?.headers, "content-security-policy") !== null;
      // The head at once, before any byte: whether a Content-Security-Policy came decides what the helper may fly
      // for the page's stylesheets, which the browser may ask for before the first bytes reach the helper.
      if (!this.post(stream, "")) this.gone(requestId, stream);
    } else if (method === "Network.dataReceived") {
      const { data, dataLength } = params as { data?: string; dataLength?: number };
      if (data !== undefined) {
        if (stream.answered) this.piece(requestId, stream, data);
        else stream.early.push(data);
      } else if (!stream.answered) stream.before += dataLength ?? 0;
      else if ((dataLength ?? 0) > 0) this.end(requestId, stream, "cut", "unstreamed bytes"); // bytes the stream did not carry
    } else if (method === "Network.loadingFinished") {
      if (stream.answered) this.end(requestId, stream, "whole");
      else if (stream.refused) this.wholeBody(requestId, stream);
      else stream.finished = true;
    } else if (method === "Network.loadingFailed") {
      this.end(requestId, stream, "cut", "load failed");
    }
  }

  /** The tab is no longer intercepted (detached, closed): its documents' streams are cut. */
  tabGone(tabId: number): void {
    for (const [requestId, stream] of [...this.streams]) if (stream.tabId === tabId) this.end(requestId, stream, "cut", "tab gone");
  }

  private answered(requestId: string, stream: Stream, buffered: unknown): void {
    if (this.streams.get(requestId) !== stream) return;
    stream.answered = true;
    const first = typeof buffered === "string" ? buffered : "";
    if (base64ByteLength(first) !== stream.before) {
      // The buffer no longer held the first bytes (or held other ones): what follows could not be placed.
      this.end(requestId, stream, "cut", `the buffer held ${base64ByteLength(first)} B of the first ${stream.before}`);
      return;
    }
    for (const data of [first, ...stream.early]) {
      if (data !== "" && !this.piece(requestId, stream, data)) return;
    }
    stream.early = [];
    if (stream.finished) this.end(requestId, stream, "whole");
  }

  /** Refused: a document that had ended (or was ending) before the command was taken, which only a small fast one
   * does (seen on loopback, 1 load in 6). Its whole body then comes from the resource buffer once it ended. */
  private refused(requestId: string, stream: Stream): void {
    if (this.streams.get(requestId) !== stream) return;
    stream.refused = true;
    if (stream.finished) this.wholeBody(requestId, stream);
  }

  /** The whole body, asked once it ended: sent whole if it is exactly the bytes the browser reported (a text body
   * comes decoded: taken only where its charset may be UTF-8 and it encodes to as many bytes), else nothing is sent. */
  private wholeBody(requestId: string, stream: Stream): void {
    this.command(stream.tabId, "Network.getResponseBody", { requestId }).then((reply) => {
      if (this.streams.get(requestId) !== stream) return;
      const { body, base64Encoded } = reply as { body?: unknown; base64Encoded?: unknown };
      const data = typeof body !== "string" ? null
        : base64Encoded === true ? body
        : maybeUtf8(stream.contentType) ? encode(new TextEncoder().encode(body)) : null;
      stream.answered = true;
      if (data === null || base64ByteLength(data) !== stream.before) this.end(requestId, stream, "cut", "whole body not the bytes reported");
      else if (data === "" || this.piece(requestId, stream, data)) this.end(requestId, stream, "whole");
    }, () => this.end(requestId, stream, "cut", "whole body refused"));
  }

  /** Send bytes of the body; false once the stream ended (past MAX_STREAMED, or the helper is gone). */
  private piece(requestId: string, stream: Stream, data: string): boolean {
    const bytes = base64ByteLength(data);
    if (stream.sent + bytes > MAX_STREAMED) {
      this.end(requestId, stream, "cut", "past the cap");
      return false;
    }
    for (let at = 0; at < data.length; at += MAX_PIECE_CHARS) {
      if (!this.post(stream, data.slice(at, at + MAX_PIECE_CHARS))) {
        this.gone(requestId, stream);
        return false;
      }
    }
    stream.sent += bytes;
    return true;
  }

  /** The helper could not be told (it is gone): the stream ends with nothing more sent. */
  private gone(requestId: string, stream: Stream): void {
    this.end(requestId, stream, "cut", "helper gone", false);
  }

  private end(requestId: string, stream: Stream, end: "whole" | "cut", why = "", tell = true): void {
    if (this.streams.get(requestId) !== stream) return;
    this.streams.delete(requestId);
    this.ended?.(stream.id, end, stream.sent, why);
    // Even a stream cut before its head: the helper then knows it will not have the document to read
    if (tell) this.post(stream, "", end);
  }

  private post(stream: Stream, data: string, end?: "whole" | "cut"): boolean {
    const message: BrowserDocument = { type: "browser_document", page: stream.page, id: stream.id, data };
    if (!stream.headSent) {
      if (stream.status !== null) message.status = stream.status;
      if (stream.contentType !== null) message.content_type = stream.contentType;
      if (stream.policy) message.content_security_policy = true;
      stream.headSent = true;
    }
    if (end !== undefined) message.end = end;
    return this.send(message);
  }
}
