// Package nodeinterop holds the test that the JavaScript bot and kvshadow's
// Go backend share one MongoDB database: the bot's own MongoKVStore (seed
// phase-02, in mongo-kv-store.js) runs on the Node.js mongodb driver against
// documents that backends/mongokv wrote, and mongokv reads what the bot
// wrote, on the embedded FerretDB of tests/mongotest (or MONGODB_URI's
// server). The npm package here is installed by `make integration` (npm ci).
package nodeinterop
