package forward

import "github.com/kvshadow/kvshadow/kv"

// compose returns the struct that embeds exactly the abilities in mask: one
// case for each of the 24 combinations (metadata implies the entry read, so
// the entry read has three states and each bulk ability two). Each is a
// pointer, so that stores compare with == as pointers do.
func compose(mask int, b base, a Abilities) kv.Store {
	ge, pe := getEntry{a.GetEntry}, putEntry{a.PutEntry, a.GetValue, a.GetMetadata}
	gm, pm, dm := getMany{a.GetMany}, putMany{a.PutMany}, deleteMany{a.DeleteMany}
	switch mask {
	case 0:
		return &b
	case hasBulkDelete:
		return &struct {
			base
			deleteMany
		}{b, dm}
	case hasBulkPut:
		return &struct {
			base
			putMany
		}{b, pm}
	case hasBulkPut | hasBulkDelete:
		return &struct {
			base
			putMany
			deleteMany
		}{b, pm, dm}
	case hasBulkGet:
		return &struct {
			base
			getMany
		}{b, gm}
	case hasBulkGet | hasBulkDelete:
		return &struct {
			base
			getMany
			deleteMany
		}{b, gm, dm}
	case hasBulkGet | hasBulkPut:
		return &struct {
			base
			getMany
			putMany
		}{b, gm, pm}
	case hasBulkGet | hasBulkPut | hasBulkDelete:
		return &struct {
			base
			getMany
			putMany
			deleteMany
		}{b, gm, pm, dm}
	case hasEntry:
		return &struct {
			base
			getEntry
		}{b, ge}
	case hasEntry | hasBulkDelete:
		return &struct {
			base
			getEntry
			deleteMany
		}{b, ge, dm}
	case hasEntry | hasBulkPut:
		return &struct {
			base
			getEntry
			putMany
		}{b, ge, pm}
	case hasEntry | hasBulkPut | hasBulkDelete:
		return &struct {
			base
			getEntry
			putMany
			deleteMany
		}{b, ge, pm, dm}
	case hasEntry | hasBulkGet:
		return &struct {
			base
			getEntry
			getMany
		}{b, ge, gm}
	case hasEntry | hasBulkGet | hasBulkDelete:
		return &struct {
			base
			getEntry
			getMany
			deleteMany
		}{b, ge, gm, dm}
	case hasEntry | hasBulkGet | hasBulkPut:
		return &struct {
			base
			getEntry
			getMany
			putMany
		}{b, ge, gm, pm}
	case hasEntry | hasBulkGet | hasBulkPut | hasBulkDelete:
		return &struct {
			base
			getEntry
			getMany
			putMany
			deleteMany
		}{b, ge, gm, pm, dm}
	case hasMetadata:
		return &struct {
			base
			getEntry
			putEntry
		}{b, ge, pe}
	case hasMetadata | hasBulkDelete:
		return &struct {
			base
			getEntry
			putEntry
			deleteMany
		}{b, ge, pe, dm}
	case hasMetadata | hasBulkPut:
		return &struct {
			base
			getEntry
			putEntry
			putMany
		}{b, ge, pe, pm}
	case hasMetadata | hasBulkPut | hasBulkDelete:
		return &struct {
			base
			getEntry
			putEntry
			putMany
			deleteMany
		}{b, ge, pe, pm, dm}
	case hasMetadata | hasBulkGet:
		return &struct {
			base
			getEntry
			putEntry
			getMany
		}{b, ge, pe, gm}
	case hasMetadata | hasBulkGet | hasBulkDelete:
		return &struct {
			base
			getEntry
			putEntry
			getMany
			deleteMany
		}{b, ge, pe, gm, dm}
	case hasMetadata | hasBulkGet | hasBulkPut:
		return &struct {
			base
			getEntry
			putEntry
			getMany
			putMany
		}{b, ge, pe, gm, pm}
	case hasMetadata | hasBulkGet | hasBulkPut | hasBulkDelete:
		return &struct {
			base
			getEntry
			putEntry
			getMany
			putMany
			deleteMany
		}{b, ge, pe, gm, pm, dm}
	}
	return &b // unreachable: Compose builds only the masks above
}
