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
// ErrExhausted, which the client takes for a failed request; one that the
// budget could never hold whole, or that holds over half of it when
// refused, with ErrTooLarge (it matches kv.ErrTooLarge too), so that the
// client asks for less.
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
	// The body, its Hold and its charged reader are one allocation.
	hb := &heldBody{hold: Hold{b: t.b, ctx: req.Context()}, body: res.Body}
	hb.charged = chargedReader{r: res.Body, h: &hb.hold, factor: max(t.factor, 1), whole: true}
	res.Body = hb
	return res, nil
}

// heldBody gives back what its reads took when it is closed.
type heldBody struct {
	hold    Hold
	charged chargedReader
	body    io.ReadCloser
}

func (b *heldBody) Read(p []byte) (int, error) { return b.charged.Read(p) }

func (b *heldBody) Close() error {
	err := b.body.Close()
	b.hold.Release()
	return err
}
