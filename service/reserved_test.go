package service

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// reservedPaths are the spellings of a key under kv.ReservedPrefix that the
// front's routes decode (once, as Workers KV does) to such a key.
var reservedPaths = []string{
	"__kvshadow:stage",
	"__kvshadow%3Astage",
	"%5F%5Fkvshadow%3Astage",
	"%5f%5fkvshadow%3astage",   // lower-case escapes
	"%5F_kvsh%61dow%3aSt%61ge", // mixed, and another key under the prefix
	"__kvshadow:",
	"__kvshadow%3A",
	"__kvshadow:outbox%2F1",
}

// multipartBody is a multipart PUT's body, as cloudflare-go sends a value
// with metadata, and its content type.
func multipartBody(t *testing.T, value string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("value", value)
	_ = w.WriteField("metadata", `{"by":"client"}`)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String(), w.FormDataContentType()
}

// A client of the front, with the clients' token, can neither read, write,
// delete nor list kvshadow's own keys, on any route and in any encoding the
// routes decode: each call is 400 10042 in Cloudflare's envelope, and
// Workers KV's __kvshadow:stage, which the proxy wrote itself through the
// same primary, is left as the proxy wrote it. The proxy still writes and
// deletes it as the stage moves, and the tee's endpoint refuses a copy of it.
func TestClientsCannotTouchReservedKeys(t *testing.T) {
	r := start(t, "--stage", "handover", "--fence-interval", "65s", "--repair-interval", "1h")
	ctx := t.Context()
	primary := r.primary[DemoNamespace].Inner() // cfkv over the emulated Workers KV
	stageIs := func(want string) func() bool {
		return func() bool {
			v, err := primary.Get(ctx, dualwrite.StageKey)
			return want == "" && err != nil || err == nil && string(v) == want
		}
	}
	eventually(t, "the proxy's own "+dualwrite.StageKey+" in Workers KV", stageIs("handover"))

	type call struct{ method, path, ctype, body string }
	var calls []call
	for _, p := range reservedPaths {
		mp, mpType := multipartBody(t, "off")
		calls = append(calls,
			call{"GET", "values/" + p, "", ""},
			call{"HEAD", "values/" + p, "", ""},
			call{"GET", "metadata/" + p, "", ""},
			call{"DELETE", "values/" + p, "", ""},
			call{"PUT", "values/" + p, "application/octet-stream", "off"},
			call{"PUT", "values/" + p, "", "dualwrite"},
			call{"PUT", "values/" + p + "?expiration_ttl=3600", "text/plain", "shadow"},
			call{"PUT", "values/" + p, mpType, mp},
			call{"GET", "keys?prefix=" + p, "", ""},
		)
	}
	for _, k := range []string{`__kvshadow:stage`, `\u005f\u005fkvshadow\u003Astage`, `__kvshadow:outbox`} {
		calls = append(calls,
			call{"PUT", "bulk", "application/json", `[{"key":"wordle:x","value":"1"},{"key":"` + k + `","value":"off"}]`},
			call{"PUT", "bulk", "application/json", `[{"key":"` + k + `","value":"c2hhZG93","base64":true}]`},
			call{"DELETE", "bulk", "application/json", `["wordle:x","` + k + `"]`},
			call{"POST", "bulk/delete", "application/json", `["` + k + `"]`},
			call{"POST", "bulk/get", "application/json", `{"keys":["wordle:x","` + k + `"],"withMetadata":true}`},
		)
	}
	base := r.api + "accounts/" + r.c.Account + "/storage/kv/namespaces/" + DemoNamespace + "/"
	for _, c := range calls {
		req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var env struct {
			Success *bool
			Errors  []struct {
				Code    int
				Message string
			}
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: %d %s, want 400", c.method, c.path, resp.StatusCode, raw)
			continue
		}
		if c.method == "HEAD" {
			continue
		}
		if err := json.Unmarshal(raw, &env); err != nil || env.Success == nil || *env.Success || len(env.Errors) != 1 ||
			env.Errors[0].Code != 10042 || !strings.Contains(env.Errors[0].Message, `keys under "__kvshadow:" are kvshadow's own`) {
			t.Errorf("%s %s: %s, want Cloudflare's envelope with error 10042 naming the prefix", c.method, c.path, raw)
		}
	}
	if !stageIs("handover")() {
		t.Fatalf("Workers KV's %s changed under the clients' calls", dualwrite.StageKey)
	}
	list, err := primary.List(ctx, kv.ListOptions{})
	if err != nil || !slices.Equal(list.Keys, []string{dualwrite.StageKey}) {
		t.Fatalf("Workers KV holds %q (%v), want the proxy's stage key alone: a refused batch wrote nothing", list.Keys, err)
	}

	// A key escaped twice is decoded once, to an ordinary key with "%" in
	// it, as Workers KV decodes it; a plain listing, and one by a prefix of
	// the reserved prefix, shows no reserved key.
	cl := r.client(t, DemoNamespace)
	if err := cl.Put(ctx, "%5F%5Fkvshadow%3Astage", []byte("off"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "_", "__kvshadow"} {
		page, err := cl.List(ctx, kv.ListOptions{Prefix: prefix})
		if err != nil || slices.ContainsFunc(page.Keys, func(k string) bool { return strings.HasPrefix(k, kv.ReservedPrefix) }) {
			t.Fatalf("a listing by %q through the front: %q, %v", prefix, page.Keys, err)
		}
	}
	if !stageIs("handover")() {
		t.Fatalf("a key escaped twice reached %s", dualwrite.StageKey)
	}

	// The tee's endpoint refuses a copy of it, counted; nothing changes.
	if code, body := r.tee(t, TeePath+"ingest", copyBatch(dualwrite.StageKey, "b2Zm", time.Now())); code != http.StatusBadRequest || !strings.Contains(body, `"reserved_key"`) {
		t.Fatalf("ingest of a copy of %s: %d %s", dualwrite.StageKey, code, body)
	}
	if n := r.stats(t).Total.IngestRefused["reserved_key"]; n != 1 {
		t.Fatalf("/stats counts %d reserved_key refusals, want 1", n)
	}

	// The proxy's own writes of the key, through the same primary, go on.
	for _, step := range []struct{ stage, want string }{{"shadow", ""}, {"handover", "handover"}} {
		if code := r.call(t, "PUT", "/stage", `{"stage":"`+step.stage+`"}`, nil); code != http.StatusOK {
			t.Fatalf("PUT /stage %s: %d", step.stage, code)
		}
		if !stageIs(step.want)() {
			t.Fatalf("in %s, Workers KV's %s is not %q", step.stage, dualwrite.StageKey, step.want)
		}
	}
}
