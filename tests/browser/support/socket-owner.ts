// Which process owns the client end of a TCP connection to one of our loopback servers (Linux /proc): this is how
// the tests prove a request came from the helper, not from the browser.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

export interface SocketOwner {
  pid: number | null;
  /** "helper" (a lanefetch process), "browser" (chromium, firefox), or "other". */
  kind: "helper" | "browser" | "other";
  cmdline: string;
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, "0");
}

function inodeOf(clientPort: number, serverPort: number): string | null {
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      const remote = cols[2];
      if (!local || !remote) continue;
      if (local.endsWith(`:${hexPort(clientPort)}`) && remote.endsWith(`:${hexPort(serverPort)}`)) return cols[9] ?? null;
    }
  }
  return null;
}

export function socketOwner(clientPort: number, serverPort: number): SocketOwner {
  const inode = inodeOf(clientPort, serverPort);
  if (inode === null) return { pid: null, kind: "other", cmdline: "" };
  const target = `socket:[${inode}]`;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      if (link !== target) continue;
      let argv: string[] = [];
      try {
        argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      } catch {
        // exited meanwhile
      }
      // Judge by the program (argv[0], or the script a Python interpreter runs), never by arguments such as paths.
      // (Chromium rewrites its command line into one string: take the first word.)
      const program = (argv[0] ?? "").split(" ")[0]?.split("/").pop() ?? "";
      const script = (argv[1] ?? "").split("/").pop() ?? "";
      const kind = /^lanefetch/.test(program) || (/^python/.test(program) && /^lanefetch/.test(script))
        ? "helper"
        : /^(chrom|firefox)/.test(program) ? "browser" : "other";
      const cmdline = argv.join(" ").trim();
      return { pid: Number(entry), kind, cmdline };
    }
  }
  return { pid: null, kind: "other", cmdline: "" };
}
