// Package mongotest gives integration tests and the demo a MongoDB-compatible
// server without installing one: it starts FerretDB v1.24 in-process (pure
// Go, SQLite storage, a random 127.0.0.1 port, data in a temporary or given
// directory), or, when the MONGODB_URI environment variable is set, hands out
// that server instead so the same tests run against a real MongoDB.
//
// It lives in the tests module so that FerretDB's dependency tree never
// reaches what a user of the kvshadow library compiles.
//
//	srv := mongotest.New(t)           // or Start(ctx, Config{}) outside tests
//	db := srv.Database(t)             // a fresh database, dropped at cleanup
//	client, _ := mongo.Connect(options.Client().ApplyURI(srv.URI()))
//
// FerretDB's known limits shape the tests that use it: it cannot create TTL
// indexes (error code 238), every query scans its collection (keep test data
// to hundreds of documents), it has no transactions and no client-level
// bulkWrite, and concurrent upserts of one new _id can fail with a
// duplicate-key error.
package mongotest
