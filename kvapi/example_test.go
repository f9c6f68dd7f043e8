package kvapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// A front as a service runs it: the Server over its stores, served through
// the hardened HTTPServer, stopped with Shutdown.
func ExampleNewHTTPServer() {
	api, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{"bot-kv": memory.New(memory.Config{})},
		AccountID:  "acc",
		Token:      "client-token", // read it from the environment or a file
	})
	if err != nil {
		panic(err)
	}
	front, err := kvapi.NewHTTPServer(api, kvapi.ServeConfig{}) // the defaults: timeouts, 64 requests at once
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- front.Serve(ln) }()

	base := "http://" + ln.Addr().String() + "/client/v4/accounts/acc/storage/kv/namespaces/bot-kv/"
	for _, auth := range []string{"", "Bearer client-token"} {
		req, _ := http.NewRequest("GET", base+"keys", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = front.Shutdown(ctx)
	fmt.Println(<-served)
	// Output:
	// 400 application/json
	// 200 application/json
	// http: Server closed
}
