package cfkv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/kv"
)

// Store is a kv.Store over one Workers KV namespace, through the REST API
// and cloudflare-go. It is safe for concurrent use.
type Store struct {
	cfg   Config // without its APIToken, which only the SDK's options and scrub hold
	api   *cf.NamespaceService
	scrub func(string) string
}

var (
	_ kv.Store         = (*Store)(nil)
	_ kv.ExpiryGetter  = (*Store)(nil)
	_ kv.BulkGetter    = (*Store)(nil)
	_ kv.BulkPutter    = (*Store)(nil)
	_ kv.BulkDeleter   = (*Store)(nil)
	_ kv.MetadataStore = (*Store)(nil)
)

// New checks cfg and returns a Store. It makes no request.
func New(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	api := cf.NewNamespaceService(
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		// Made once, where WithAPIToken formats it every request.
		option.WithHeader("Authorization", "Bearer "+cfg.APIToken),
		option.WithMaxRetries(0), // ours are in retry.go
		// No WithRequestTimeout: retry bounds each try by its context.
	)
	token := cfg.APIToken
	cfg.APIToken = ""
	// A server that echoes the token may change its case (a header
	// canonicalised, an error message upper-cased): match it in any case.
	echo := regexp.MustCompile("(?i)" + regexp.QuoteMeta(token))
	scrub := func(text string) string { return echo.ReplaceAllLiteralString(text, "[redacted]") }
	return &Store{cfg: cfg, api: api, scrub: scrub}, nil
}

// String names the store's namespace, never its token.
func (s *Store) String() string {
	return fmt.Sprintf("cfkv.Store{account: %q, namespace: %q}", s.cfg.AccountID, s.cfg.NamespaceID)
}

// pathKey escapes a key as one path segment (why: the package doc).
func pathKey(key string) string { return url.PathEscape(key) }

// Get implements kv.Store with one request: the value's own.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := kv.ValidateKey(key); err != nil {
		return nil, err
	}
	e, err := s.getValue(ctx, key)
	return e.Value, err
}

// GetEntry implements kv.ExpiryGetter and kv.MetadataStore with one
// bulk/get of the key withMetadata; the package doc says when it costs more.
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	got, err := s.getChunk(ctx, []string{key})
	if refusedBulkRead(err) || errors.Is(err, kv.ErrTooLarge) {
		return s.getSeparately(ctx, key)
	}
	if err != nil {
		return kv.Entry{}, err
	}
	if len(got) == 0 {
		return kv.Entry{}, kv.ErrNotFound
	}
	return s.exactValue(ctx, got[0])
}

// GetValue implements kv.MetadataStore with one request, the value's own
// GET, which carries the expiry in a header.
func (s *Store) GetValue(ctx context.Context, key string) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	return s.getValue(ctx, key)
}

// refusedBulkRead reports a bulk/get refused as a bad request: the API
// documents bulk/get for text values only, and may refuse a key that holds
// another kind.
func refusedBulkRead(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.kind == nil && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnsupportedMediaType)
}

// getSeparately reads a key with its value's GET and its metadata's GET:
// two requests, where bulk/get cannot serve it.
func (s *Store) getSeparately(ctx context.Context, key string) (kv.Entry, error) {
	e, err := s.getValue(ctx, key)
	if err != nil {
		return kv.Entry{}, err
	}
	if e.Metadata, err = s.getMetadata(ctx, key); err != nil {
		return kv.Entry{}, err
	}
	return e, nil
}

// GetMetadata implements kv.MetadataStore with one request, the metadata's
// own GET.
func (s *Store) GetMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	if err := kv.ValidateKey(key); err != nil {
		return nil, err
	}
	return s.getMetadata(ctx, key)
}

func (s *Store) getMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	var params cf.NamespaceMetadataGetParams
	params.AccountID.Value = s.cfg.AccountID
	// Read raw: the SDK's metadata numbers are float64 (the package doc).
	var body []byte
	err := s.callRaw(ctx, "get metadata", &body, func(ctx context.Context, opts ...option.RequestOption) error {
		_, err := s.api.Metadata.Get(ctx, s.cfg.NamespaceID, pathKey(key), params, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, &APIError{Op: "get metadata", Status: http.StatusOK, Message: "the result is not JSON"}
	}
	return kv.NormalizeMetadata(env.Result), nil
}

// exactValue returns e, read by bulk/get, with its value read again by the
// value's own GET when bulk/get may have replaced bytes that are not UTF-8
// by U+FFFD. The metadata stays bulk/get's: the value's GET has none.
func (s *Store) exactValue(ctx context.Context, e kv.Entry) (kv.Entry, error) {
	if !bytes.ContainsRune(e.Value, utf8.RuneError) {
		return e, nil
	}
	raw, err := s.getValue(ctx, e.Key)
	if err != nil {
		return kv.Entry{}, err
	}
	raw.Metadata = e.Metadata
	return raw, nil
}

// getValue reads a value and its expiry with the value's own GET.
func (s *Store) getValue(ctx context.Context, key string) (kv.Entry, error) {
	var params cf.NamespaceValueGetParams
	params.AccountID.Value = s.cfg.AccountID
	var entry kv.Entry
	err := s.retry(ctx, func(ctx context.Context) outcome {
		// Values.Get returns its answer with its error too (a refusal the
		// SDK could not type): no option.WithResponseInto to build a try.
		resp, err := s.api.Values.Get(ctx, s.cfg.NamespaceID, pathKey(key), params)
		if err == nil {
			entry, err = s.readValue(key, resp)
		}
		return s.outcomeOf(ctx, "get", resp, err)
	})
	if err != nil {
		return kv.Entry{}, err
	}
	return entry, nil
}

func (s *Store) readValue(key string, resp *http.Response) (kv.Entry, error) {
	body, err := readBody(resp, kv.MaxValueSize+1)
	if err != nil {
		return kv.Entry{}, err
	}
	// Values come as application/octet-stream; a JSON body here is the
	// API's envelope, and success:false a refusal (its type read without
	// mime.ParseMediaType, whose parameters map costs every read).
	if mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		if refused, ok := envelopeRefusal(resp, body).(*cf.Error); ok {
			return kv.Entry{}, refused
		}
	}
	if len(body) > kv.MaxValueSize {
		return kv.Entry{}, &APIError{Op: "get", Status: resp.StatusCode, Message: "the value is larger than Workers KV allows"}
	}
	exp, err := parseExpiration(resp.Header.Get("Expiration"))
	if err != nil {
		return kv.Entry{}, &APIError{Op: "get", Status: resp.StatusCode, Message: err.Error()}
	}
	if body == nil {
		body = []byte{} // an empty value is a value
	}
	return kv.Entry{Key: key, Value: body, Expiration: exp}, nil
}

// parseExpiration reads the API's expiration: whole seconds since the epoch.
func parseExpiration(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return time.Time{}, errors.New("the expiration header is not a time")
	}
	return time.Unix(int64(f), 0), nil
}

// Put implements kv.Store. An absolute expiry goes in Unix seconds rounded
// up, so that the API's own 60 s check agrees with kv.ValidatePut.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	if err := kv.ValidatePut(key, value, opts, s.cfg.Clock.Now()); err != nil {
		return err
	}
	return s.put(ctx, key, opts, option.WithRequestBody("application/octet-stream", value))
}

// put writes one key with the given body, which replaces the SDK's.
func (s *Store) put(ctx context.Context, key string, opts kv.PutOptions, body option.RequestOption) error {
	var params cf.NamespaceValueUpdateParams
	params.AccountID.Value = s.cfg.AccountID
	switch {
	case opts.TTL != 0:
		params.ExpirationTTL.Value, params.ExpirationTTL.Present = float64(opts.TTL/time.Second), true
	case !opts.Expiration.IsZero():
		params.Expiration.Value, params.Expiration.Present = float64(unixCeil(opts.Expiration)), true
	}
	return s.callRaw(ctx, "put", nil, func(ctx context.Context, opts ...option.RequestOption) error {
		_, err := s.api.Values.Update(ctx, s.cfg.NamespaceID, pathKey(key), params, append(opts, body)...)
		return err
	})
}

// PutEntry implements kv.MetadataStore in one request: a Put, or with
// metadata one multipart form (see the package doc).
func (s *Store) PutEntry(ctx context.Context, e kv.Entry) error {
	if err := kv.ValidateEntry(e, s.cfg.Clock.Now()); err != nil {
		return err
	}
	opts := kv.PutOptions{Expiration: e.Expiration}
	e.Metadata = kv.NormalizeMetadata(e.Metadata)
	if e.Metadata == nil {
		return s.put(ctx, e.Key, opts, option.WithRequestBody("application/octet-stream", e.Value))
	}
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	for _, f := range []struct {
		name string
		data []byte
	}{{"value", e.Value}, {"metadata", e.Metadata}} {
		part, err := w.CreateFormField(f.name)
		if err == nil {
			_, err = part.Write(f.data)
		}
		if err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return s.put(ctx, e.Key, opts, option.WithRequestBody(w.FormDataContentType(), form.Bytes()))
}

func unixCeil(t time.Time) int64 {
	if t.Nanosecond() > 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := kv.ValidateKey(key); err != nil {
		return err
	}
	var params cf.NamespaceValueDeleteParams
	params.AccountID.Value = s.cfg.AccountID
	err := s.callRaw(ctx, "delete", nil, func(ctx context.Context, opts ...option.RequestOption) error {
		_, err := s.api.Values.Delete(ctx, s.cfg.NamespaceID, pathKey(key), params, opts...)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil // deleting a missing key is not an error
	}
	return err
}
