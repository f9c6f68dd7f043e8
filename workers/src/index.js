/**
 * kvshadow on Cloudflare Workers.
 * @module
 */
export { kvshadowBinding, ProxyNamespace } from "./binding.js";
export { kvshadowTee, TeeNamespace, forgetStages } from "./tee.js";
