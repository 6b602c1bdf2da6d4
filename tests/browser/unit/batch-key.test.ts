// batchKey decides alone what keeps two held requests' batches apart: tab, request origin, embedded frame's site,
// address space, page URL (without fragment), whether the helper only answers from what it holds, and whether a
// service/shared worker asked. Two requests share a batch exactly when all of these are equal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { batchKey, batchOfTab, type HeldRequest, type PageInfo } from "../../../extension/src/background/accelerator.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { AddressSpace } from "../../../extension/src/sites/address-space.js";
import { seededRandom } from "../support/seeded-random.js";

const responder: FetchResponder = { fulfill: () => Promise.resolve(true), pass: () => Promise.resolve() };

interface Inputs {
  tabId: number;
  url: string;
  pageUrl: string;
  frameSite?: string;
  addressSpace: AddressSpace;
  worker?: string;
}

function held(inputs: Inputs): HeldRequest {
  const page: PageInfo = {
    url: inputs.pageUrl, topSite: "https://shop.example", siteActive: true, addressSpace: inputs.addressSpace, plainHttpHosts: [],
    privateBrowsing: false,
  };
  if (inputs.frameSite !== undefined) page.frameSite = inputs.frameSite;
  if (inputs.worker !== undefined) page.worker = inputs.worker;
  return {
    tabId: inputs.tabId, responder, page,
    paused: { interceptionId: "i1", url: inputs.url, method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false },
  };
}

const BASE: Inputs = { tabId: 1, url: "https://shop.example/1.png", pageUrl: "https://shop.example/a.html", addressSpace: "public" };

function key(changes: Partial<Inputs> = {}, helperHoldsOnly = false): string {
  return batchKey(held({ ...BASE, ...changes }), helperHoldsOnly);
}

test("two pages' requests never share a batch, even in one tab and origin; a fragment does not make another page", () => {
  const a = key();
  assert.notEqual(a, key({ pageUrl: "https://shop.example/b.html" }));
  assert.notEqual(a, key({ pageUrl: "https://shop.example/a.html?x=1" }));
  assert.equal(a, key({ pageUrl: "https://shop.example/a.html#top", url: "https://shop.example/2.png" }));
});

test("one page's requests are batched per tab, origin and embedded frame", () => {
  const a = key();
  assert.notEqual(a, key({ url: "https://cdn.example/1.png" }));
  assert.notEqual(a, key({ tabId: 2 }));
  assert.notEqual(a, key({ frameSite: "https://video.example" }));
  assert.notEqual(a, key({ addressSpace: "loopback" }), "a frame's own document may judge its requests more public (embedded-frames.ts)");
});

test("requests differing only in whether the helper answers from what it holds, or a worker asked, never share a batch", () => {
  const worker = { worker: "https://shop.example/sw.js", pageUrl: "" };
  for (const holds of [false, true]) {
    assert.notEqual(key({}, holds), key({}, !holds));
    assert.notEqual(key(worker, holds), key(worker, !holds));
    assert.equal(key({}, holds), key({}, holds), "equal inputs share one batch");
    assert.equal(key(worker, holds), key(worker, holds));
  }
  // A worker's batch names no page (its PageInfo.url is ""); a page whose URL happened to be the same stays apart.
  assert.notEqual(key(worker), key({ pageUrl: "" }));
  assert.notEqual(key(worker), key({ ...worker, worker: undefined }));
});

test("no page URL reads as another field: a URL ending like a held or worker batch's key stays apart", () => {
  const page = "https://shop.example/a.html";
  for (const suffix of ["|held", "|worker", "|held|worker", "|fetched|page"]) {
    const odd = key({ pageUrl: `${page}?q=${suffix}` });
    assert.notEqual(odd, key({ pageUrl: `${page}?q=` }, true));
    assert.notEqual(odd, key({ pageUrl: `${page}?q=`, worker: "https://shop.example/sw.js" }));
  }
});

test("a tab's batches are found by its id, and no other tab's", () => {
  assert.ok(batchOfTab(key({ tabId: 1 }), 1));
  assert.ok(batchOfTab(key({ tabId: 1 }, true), 1));
  assert.ok(!batchOfTab(key({ tabId: 11 }), 1));
  assert.ok(!batchOfTab(key({ tabId: 1 }), 11));
});

test("randomised: two requests share a batch exactly when every input that separates batches is equal", () => {
  const random = seededRandom(20261203);
  // Each input's choices; a request is one choice per input. The page URLs include one that ends like a key's flags.
  const choices = {
    tabId: [1, 2, 11],
    url: ["https://shop.example/1.png", "https://shop.example/2.png", "https://cdn.example/1.png"],
    pageUrl: ["https://shop.example/a.html", "https://shop.example/b.html?q=|held", "https://shop.example/a.html?x=1", ""],
    fragment: ["", "#top"],
    addressSpace: ["public", "private", "loopback"] as AddressSpace[],
    frameSite: [undefined, "https://video.example", "https://ads.example"],
    worker: [undefined, "https://shop.example/sw.js"],
    holds: [false, true],
  };
  type Draw = { [K in keyof typeof choices]: (typeof choices)[K][number] };
  const names = Object.keys(choices) as (keyof typeof choices)[];
  const pickOne = (name: keyof typeof choices): unknown => {
    const list: readonly unknown[] = choices[name];
    return list[Math.floor(random() * list.length)];
  };
  const draw = (): Draw => Object.fromEntries(names.map((n) => [n, pickOne(n)])) as Draw;
  const keyOf = (d: Draw): string => {
    const inputs: Inputs = { tabId: d.tabId, url: d.url, pageUrl: d.pageUrl === "" ? "" : d.pageUrl + d.fragment, addressSpace: d.addressSpace };
    if (d.frameSite !== undefined) inputs.frameSite = d.frameSite;
    if (d.worker !== undefined) inputs.worker = d.worker;
    return batchKey(held(inputs), d.holds);
  };
  // What separates batches, written out apart from batchKey: every input but the fragment; the request's origin only.
  const separating = (d: Draw): string => JSON.stringify([d.tabId, new URL(d.url).origin, d.pageUrl, d.addressSpace,
    d.frameSite ?? null, d.worker !== undefined, d.holds]);
  let shared = 0;
  for (let i = 0; i < 3000; i += 1) {
    const a = draw();
    // Half the time the second request is the first with one input drawn again (often equal, or one difference).
    const b: Draw = random() < 0.5 ? draw() : (() => {
      const name = names[Math.floor(random() * names.length)] as keyof typeof choices;
      return { ...a, [name]: pickOne(name) };
    })();
    const same = keyOf(a) === keyOf(b);
    assert.equal(same, separating(a) === separating(b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    if (same) shared += 1;
  }
  assert.ok(shared > 100, `the equal case was tried (${shared} shared)`);
});
