// Package deploy holds no code: its tests check the deployment forms of
// kvshadow-proxy beside them (a module of its own, so that the Kubernetes
// and kustomize libraries they decode with never reach a library user's
// build).
//
//   - kubernetes/: every manifest decodes strictly into the Kubernetes API
//     types, the example overlay renders with the kustomize API, and the
//     rendered objects keep the invariants the proxy's guarantees rest on
//     (one journal volume per replica, a stop time that covers the drain,
//     probes on real routes, the admin port off the public Service);
//   - systemd/: systemd-analyze verify, and the same invariants;
//   - docker-compose.proxy.yml: the journal volume, the secrets, the stop
//     time, the admin port on loopback;
//   - the container image (make image): unpacked from its own OCI layout and
//     run with chroot as its own user, it starts, answers its probes and
//     serves a Workers KV client.
package deploy
