// A NativePort over the real helper process (what the browser does: spawn the host, 4-byte native-endian length +
// UTF-8 JSON on stdio). Every message in both directions is checked against the protocol schema.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import { protocolErrors } from "./protocol-validator.js";

export interface ProcessPortLog {
  sent: unknown[];
  received: unknown[];
  schemaViolations: string[];
}

let ownDirs: string | null = null;

/** The runner's environment with the helper's cache and config kept in a directory of this test process (removed
 *  at its exit), so a test never reads or writes the machine user's ~/.cache/lanefetch or ~/.config/lanefetch.
 *  A test that needs its own directories passes them in `env`. */
export function testHelperEnv(): NodeJS.ProcessEnv {
  if (ownDirs === null) {
    const dir = mkdtempSync(join(tmpdir(), "lf-helper-home-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    ownDirs = dir;
  }
  // LANEFETCH_TEST_WPAD: the helper's WPAD lookup answers "none" (bridge/system_proxy.py), never this machine's DNS
  return { ...process.env, XDG_CACHE_HOME: join(ownDirs, "cache"), XDG_CONFIG_HOME: join(ownDirs, "config"), LANEFETCH_TEST_WPAD: "" };
}

export class ProcessNativePort implements NativePort {
  readonly child: ChildProcess;
  private buffer = Buffer.alloc(0);
  private readonly messageListeners: ((m: unknown) => void)[] = [];
  private readonly disconnectListeners: ((e: string | undefined) => void)[] = [];
  private closed = false;

  constructor(
    command: string,
    readonly log: ProcessPortLog = { sent: [], received: [], schemaViolations: [] },
    env: NodeJS.ProcessEnv = testHelperEnv(),
  ) {
    this.child = spawn(command, ["/dev/null", "chrome-extension://test/"], { stdio: ["pipe", "pipe", "inherit"], env });
    this.child.stdout?.on("data", (data: Buffer) => this.onData(data));
    this.child.on("error", (e) => this.close(`Specified native messaging host not found. (${e.message})`));
    this.child.on("exit", () => this.close("Native host has exited."));
    this.child.stdin?.on("error", () => undefined);
  }

  postMessage(message: unknown): void {
    if (this.closed) throw new Error("Attempting to use a disconnected port object");
    const violation = protocolErrors.toHost(message);
    if (violation) this.log.schemaViolations.push(`to host: ${violation}: ${JSON.stringify(message).slice(0, 300)}`);
    this.log.sent.push(message);
    const body = Buffer.from(JSON.stringify(message), "utf8");
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length, 0);
    this.child.stdin?.write(Buffer.concat([head, body]));
  }

  onMessage(listener: (message: unknown) => void): void {
    this.messageListeners.push(listener);
  }

  onDisconnect(listener: (error: string | undefined) => void): void {
    this.disconnectListeners.push(listener);
  }

  disconnect(): void {
    this.closed = true;
    this.child.stdin?.end();
    this.child.kill();
  }

  private onData(data: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, data]);
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUInt32LE(0);
      if (length > 1024 * 1024) {
        this.log.schemaViolations.push(`host sent ${length} bytes, above the 1 MiB native messaging limit`);
        this.disconnect();
        this.close("Native host has exited.");
        return;
      }
      if (this.buffer.length < 4 + length) return;
      const message = JSON.parse(this.buffer.subarray(4, 4 + length).toString("utf8")) as unknown;
      this.buffer = this.buffer.subarray(4 + length);
      const violation = protocolErrors.toExtension(message);
      if (violation) this.log.schemaViolations.push(`to extension: ${violation}: ${JSON.stringify(message).slice(0, 300)}`);
      this.log.received.push(message);
      for (const l of this.messageListeners) l(message);
    }
  }

  private close(error: string | undefined): void {
    if (this.closed) return; // our own disconnect() is not reported, as in browsers
    this.closed = true;
    setTimeout(() => {
      for (const l of this.disconnectListeners) l(error);
    }, 0);
  }
}
