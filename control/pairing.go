package control

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Pairing is what a stage document governs: a Workers KV account, and each
// namespace with the MongoDB database of its keys (see "The pairing" in the
// package doc). The zero Pairing checks nothing.
type Pairing struct {
	Account    string      `bson:"account"`
	Namespaces []Namespace `bson:"namespaces"`
}

// Namespace is a Workers KV namespace ID and the MongoDB database of its keys.
type Namespace struct {
	ID       string `bson:"id"`
	Database string `bson:"database"`
}

func (p Pairing) zero() bool { return p.Account == "" && len(p.Namespaces) == 0 }

// covers reports whether a document of p governs an instance of q: the same
// account, and each of q's namespaces with the same database.
func (p Pairing) covers(q Pairing) bool {
	return p.Account == q.Account && !slices.ContainsFunc(q.Namespaces, func(n Namespace) bool { return !slices.Contains(p.Namespaces, n) })
}

// String names p in words, "" for the zero Pairing.
func (p Pairing) String() string {
	if p.zero() {
		return ""
	}
	s := "Workers KV account " + p.Account
	for _, n := range p.Namespaces {
		s += ", namespace " + n.ID + " (MongoDB database " + n.Database + ")"
	}
	return s
}

// Sides are a namespace's two stores, which Read lists once when the start
// is in live, rampdown or complete; Exclude leaves the excluded keys out.
type Sides struct {
	Primary, Shadow kv.Store
	Exclude         kv.Exclusions
}

// Read loads the Document for an instance of cfg (Board, Pairing, Initial,
// NewPairing, Stores) before it builds its stores, and refuses a start as
// "The pairing" in the package doc says (ErrConfig, in one line).
func Read(ctx context.Context, cfg Config) (Document, error) {
	doc, err := cfg.Board.Load(ctx)
	if err == nil {
		err = cfg.refuse(doc, cfg.Initial)
	}
	if err != nil {
		return doc, err
	}
	stage := doc.Stage
	if doc.Generation == 0 {
		stage = cfg.Initial
	}
	for _, sd := range cfg.Stores {
		if stage.ShadowAuthoritative() && !holdsKeys(ctx, sd.Shadow, sd.Exclude, true) && holdsKeys(ctx, sd.Primary, sd.Exclude, false) {
			return doc, fmt.Errorf("%w: MongoDB, authoritative in %s, holds no key while Workers KV holds some: it was never backfilled, or it is another database "+
				"than the one the migration filled (this instance serves %s): fix the setting, or backfill MongoDB first", ErrConfig, stage, cfg.Pairing)
		}
	}
	return doc, nil
}

// holdsKeys reports whether st holds a key outside ex, reading a few pages
// at most; unknown when that cannot be told (which then refuses nothing).
func holdsKeys(ctx context.Context, st kv.Store, ex kv.Exclusions, unknown bool) bool {
	opts := kv.ListOptions{Limit: 10}
	for range 3 {
		page, err := st.List(ctx, opts)
		if err != nil {
			return unknown
		}
		if slices.ContainsFunc(page.Keys, func(k string) bool { return !ex.Excludes(k) }) {
			return true
		}
		if page.Done {
			return false
		}
		opts.Cursor, opts.Limit = page.Cursor, kv.MaxListLimit
	}
	return unknown
}

// refuse is Read's refusals that doc alone decides, for an instance that
// would write seed to a Board with no Document.
func (c Config) refuse(doc Document, seed dualwrite.Stage) error {
	switch p := c.Pairing; {
	case c.NewPairing || p.zero() || (doc.Generation > 0 && (doc.Pairing.zero() || doc.Pairing.covers(p))):
		return nil
	case doc.Generation > 0:
		return fmt.Errorf("%w: the stage document (%s at generation %d) governs %s, and this instance serves %s: "+
			"a wrong account, namespace or MongoDB database would make the wrong store the truth", ErrConfig, doc.Stage, doc.Generation, doc.Pairing, p)
	case seed > dualwrite.Shadow:
		return fmt.Errorf("%w: the control board holds no stage document, and a first start in %s on it is refused (a new or mistyped database, "+
			"a new namespace?): this instance serves %s", ErrConfig, seed, p)
	}
	return nil
}

// claim is what a joining instance writes to the Board before it follows
// doc (a zero Document: nothing), or why it must not start (refuse): with
// no Document, seed as generation 1; in a Document that names no pairing,
// or with NewPairing another, this instance's, one generation on.
func (c Config) claim(doc Document, seed dualwrite.Stage) (Document, error) {
	if err := c.refuse(doc, seed); err != nil {
		return Document{}, err
	}
	next := Document{Stage: doc.Stage, Generation: doc.Generation + 1, Pairing: c.Pairing}
	switch {
	case doc.Generation == 0:
		next.Stage = seed
	case c.Pairing.zero() || (!doc.Pairing.zero() && doc.Pairing.covers(c.Pairing)):
		return Document{}, nil
	}
	return next, nil
}
