// Where a host lives (public Internet, private network, this machine), judged from its name or IP literal.
import type { AddressSpace } from "../generated/protocol.js";

export type { AddressSpace };

function ipv4Space(parts: number[]): AddressSpace {
  const [a = 0, b = 0] = parts;
  if (a === 127) return "loopback";
  if (a === 10 || a === 0) return "private";
  if (a === 172 && b >= 16 && b <= 31) return "private";
  if (a === 192 && b === 168) return "private";
  if (a === 169 && b === 254) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "private"; // carrier-grade NAT
  return "public";
}

function parseIpv4(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

function ipv6Space(addr: string): AddressSpace {
  const a = addr.toLowerCase();
  if (a === "::1") return "loopback";
  if (a === "::") return "private";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped?.[1]) {
    const v4 = parseIpv4(mapped[1]);
    if (v4) return ipv4Space(v4);
  }
  const mappedHex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (mappedHex?.[1] && mappedHex[2]) {
    const hi = parseInt(mappedHex[1], 16);
    const lo = parseInt(mappedHex[2], 16);
    return ipv4Space([hi >> 8, hi & 255, lo >> 8, lo & 255]);
  }
  if (/^f[cd][0-9a-f]{0,2}:/.test(a) || /^fe[89ab][0-9a-f]?:/.test(a)) return "private";
  return "public";
}

/**
 * Address space of a URL host (as `URL.hostname` gives it). Names are judged by special-use domains only:
 * `localhost`, `*.localhost` and `*.test` (RFC 6761: never in the public DNS, resolved only by local configuration,
 * which is how the tests map them to 127.0.0.1) are loopback; `*.local`, `*.internal`, `*.home.arpa`, `*.lan` and
 * single-label names are private. A public name that resolves to a private address is caught by the helper.
 */
export function addressSpaceOfHost(hostname: string): AddressSpace {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host.startsWith("[") && host.endsWith("]")) return ipv6Space(host.slice(1, -1));
  const v4 = parseIpv4(host);
  if (v4) return ipv4Space(v4);
  if (host === "localhost" || host.endsWith(".localhost") || host === "test" || host.endsWith(".test")) return "loopback";
  if (!host.includes(".")) return "private";
  if (/\.(local|internal|lan|intranet|home\.arpa)$/.test(host)) return "private";
  return "public";
}

export function addressSpaceOfUrl(url: string): AddressSpace | null {
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") return null;
    return addressSpaceOfHost(u.hostname);
  } catch {
    return null;
  }
}

const RANK: Record<AddressSpace, number> = { public: 0, private: 1, loopback: 2 };

/** The more public of two spaces: where a request sits in documents of several spaces (a public frame inside a
 * loopback page), the helper may reach for it only what the most public of them may. */
export function morePublic(a: AddressSpace, b: AddressSpace): AddressSpace {
  return RANK[a] <= RANK[b] ? a : b;
}

/** A page may make the helper reach targets in its own address space or a more public one. */
export function mayReach(page: AddressSpace, target: AddressSpace): boolean {
  return RANK[target] <= RANK[page];
}
