package check

import "fmt"

// identRef names one of the identities an identTable holds for an offset:
// 0 none (no intact record), 1 the offset's first identity, k the
// (k-1)-th of its others.
type identRef uint16

// identsPerOffsetMax bounds the identities one offset can have: every one
// beyond the first is a record some other epoch's owner wrote there.
const identsPerOffsetMax = 1<<16 - 2

// identTable interns a queue's record identities by offset. The replicas
// of a queue nearly always hold one record per offset, and the checkers
// keep, per replica, what it was told to write and what its disk holds:
// as an identRef each, two bytes per offset per replica instead of an
// Ident's 24. Interning is exact: two refs of one offset are equal iff
// their identities are. The table only grows (a ref stays valid), and
// the identities beyond an offset's first are rare (a divergent suffix, a
// damaged copy rewritten) and kept apart.
type identTable struct {
	first []Ident            // by offset; an Ident that is not intact: none yet
	more  map[uint64][]Ident // offset -> its identities beyond the first
}

// ref interns id at offset o.
func (t *identTable) ref(o uint64, id Ident) identRef {
	if !id.Intact() {
		return 0
	}
	for uint64(len(t.first)) <= o {
		t.first = append(t.first, Ident{})
	}
	switch f := &t.first[o]; {
	case !f.Intact():
		*f = id
		return 1
	case *f == id:
		return 1
	}
	more := t.more[o]
	for i := range more {
		if more[i] == id {
			return identRef(i + 2)
		}
	}
	if len(more) >= identsPerOffsetMax {
		panic(fmt.Sprintf("check: more than %d records at offset %d", identsPerOffsetMax, o))
	}
	if t.more == nil {
		t.more = map[uint64][]Ident{}
	}
	t.more[o] = append(more, id)
	return identRef(len(more) + 2)
}

// find returns the ref of id at offset o, without interning it (0: none
// held, or id is not intact).
func (t *identTable) find(o uint64, id Ident) identRef {
	if !id.Intact() || o >= uint64(len(t.first)) {
		return 0
	}
	if t.first[o] == id {
		return 1
	}
	for i, m := range t.more[o] {
		if m == id {
			return identRef(i + 2)
		}
	}
	return 0
}

// id returns the identity r names at offset o.
func (t *identTable) id(o uint64, r identRef) Ident {
	switch r {
	case 0:
		return Ident{}
	case 1:
		return t.first[o]
	}
	return t.more[o][r-2]
}
