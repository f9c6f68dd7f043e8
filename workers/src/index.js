/**
 * kvshadow on Cloudflare Workers.
 * @module
 */
export { kvshadowBinding, ProxyNamespace } from "./binding.js";
