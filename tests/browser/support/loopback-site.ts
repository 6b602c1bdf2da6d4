// A loopback HTTP server and a fresh Chromium with 127.0.0.1 turned on and its helper up: what a real-browser test of
// one site's answers starts from (http-auth.test.ts, coded-bodies.test.ts). Stopped by pid-owning handles only: the
// browser the harness launched and the server this made.
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { freshProfile, launch, setSites, waitForHelper, type Browser } from "./chromium-harness.js";

export interface LoopbackSite {
  browser: Browser;
  server: Server;
  origin: string; // http://127.0.0.1:PORT
}

export async function startLoopbackSite(serve: RequestListener): Promise<LoopbackSite> {
  const server = createServer(serve);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let browser: Browser | undefined;
  try {
    browser = await launch(freshProfile(true));
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
    await waitForHelper(browser.context);
    return { browser, server, origin };
  } catch (error) {
    await browser?.close();
    await new Promise<void>((ok) => server.close(() => ok()));
    throw error;
  }
}

export async function stopLoopbackSite(site: LoopbackSite | undefined): Promise<void> {
  if (site === undefined) return;
  await site.browser.close();
  await new Promise<void>((ok) => site.server.close(() => ok()));
}
