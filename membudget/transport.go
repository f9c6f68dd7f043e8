package membudget

import (
	"io"
	"net/http"
)

// Transport wraps rt so that each response body it returns is charged to
// the budget as it is read, factor bytes for each byte (what the reader
// builds from it: a JSON answer decoded, its values copied out), until the
// body is closed. A store's client reads through it what no request of the
// process counts otherwise: Workers KV's bulk get answers, up to six times
// the values they carry. A read the budget cannot pay for fails with
// ErrExhausted, which the client takes for a failed request.
func (b *Budget) Transport(rt http.RoundTripper, factor int64) http.RoundTripper {
	if b == nil {
		return rt
	}
	return &transport{rt: rt, b: b, factor: factor}
}

type transport struct {
	rt     http.RoundTripper
	b      *Budget
	factor int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.rt.RoundTrip(req)
	if err != nil || res.Body == nil || res.Body == http.NoBody {
		return res, err
	}
	h := t.b.Hold(req.Context())
	res.Body = &heldBody{Reader: h.Reader(res.Body, t.factor), body: res.Body, h: h}
	return res, nil
}

// heldBody gives back what its reads took when it is closed.
type heldBody struct {
	io.Reader
	body io.ReadCloser
	h    *Hold
}

func (b *heldBody) Close() error {
	err := b.body.Close()
	b.h.Release()
	return err
}
