// Values esbuild defines at build time (extension/build/build.ts), read only by entry points.
declare const __LANEFETCH_BROWSER__: "chromium" | "firefox";
declare const __LANEFETCH_NATIVE_HOST__: string;
