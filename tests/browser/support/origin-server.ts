// A real HTTP/1.1 origin server on 127.0.0.1 for the tests. It logs every request with the process that owns the
// client socket (helper or browser), the connection it came on, and how many requests were in flight on that
// connection when it arrived (>1 means the client pipelined).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { socketOwner, type SocketOwner } from "./socket-owner.js";

export interface LoggedRequest {
  method: string;
  host: string;
  path: string;
  headers: IncomingMessage["headers"];
  connection: number;
  indexOnConnection: number;
  inFlightOnArrival: number;
  owner: SocketOwner;
}

/** Serve https with this certificate chain and key (PEM). */
export interface OriginTls {
  cert: string;
  key: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

interface ConnectionState {
  id: number;
  owner: SocketOwner;
  requests: number;
  inFlight: number;
}

export class OriginServer {
  private readonly server: Server;
  private readonly connections = new WeakMap<Socket, ConnectionState>();
  private readonly sockets = new Set<Socket>();
  private connectionCount = 0;
  /** https: the process behind each TCP connection, handshake completed or not. */
  readonly tcpOwners: SocketOwner[] = [];

  constructor(
    private readonly handler: Handler,
    /** Loopback address to listen on (the whole 127.0.0.0/8 is this machine: several sites without DNS). */
    private readonly address = "127.0.0.1",
    /** Shared by several servers when a test wants one log of everything. */
    readonly log: LoggedRequest[] = [],
    private readonly tls?: OriginTls,
  ) {
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => void this.onRequest(req, res);
    this.server = tls ? createTlsServer({ keepAliveTimeout: 30000, ...tls }, onRequest) : createServer({ keepAliveTimeout: 30000 }, onRequest);
    // Every TCP connection's owner, taken while it is open (a client that refuses the certificate is gone soon).
    if (tls) this.server.on("connection", (socket: Socket) => this.tcpOwners.push(socketOwner(socket.remotePort ?? 0, this.port)));
    this.server.on(tls ? "secureConnection" : "connection", (socket: Socket) => {
      this.connectionCount += 1;
      const port = (this.server.address() as AddressInfo).port;
      this.connections.set(socket, {
        id: this.connectionCount,
        owner: socketOwner(socket.remotePort ?? 0, port),
        requests: 0,
        inFlight: 0,
      });
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, this.address, resolve));
    return this.port;
  }

  url(): URL {
    return new URL(this.origin);
  }

  get origin(): string {
    return `${this.tls ? "https" : "http"}://${this.address}:${this.port}`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  clearLog(): void {
    this.log.length = 0;
  }

  /** Close idle keep-alive connections (so a later test starts with fresh ones). */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const state = this.connections.get(req.socket) ?? { id: 0, owner: { pid: null, kind: "other", cmdline: "" }, requests: 0, inFlight: 0 };
    state.requests += 1;
    state.inFlight += 1;
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "unknown"}`);
    this.log.push({
      method: req.method ?? "",
      host: url.host,
      path: url.pathname + url.search,
      headers: req.headers,
      connection: state.id,
      indexOnConnection: state.requests,
      inFlightOnArrival: state.inFlight,
      owner: state.owner,
    });
    res.on("finish", () => {
      state.inFlight -= 1;
    });
    try {
      await this.handler(req, res, url);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(e));
    }
  }
}
