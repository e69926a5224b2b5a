package seam

import (
	"strconv"

	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/io/meta"
)

// The stable text forms below are part of the contract: traces, golden files
// and trace hashes are made of them. Change them only on purpose.

// AppendKV appends " key=v".
func AppendKV(dst []byte, key string, v uint64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return AppendUint(dst, v)
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// AppendUint is strconv.AppendUint(dst, v, 10), two digits a step: traces
// print a dozen numbers per line and millions of lines per run.
func AppendUint(dst []byte, v uint64) []byte {
	if v < 10 {
		return append(dst, byte('0'+v)) // most ids, epochs and counts
	}
	var buf [20]byte
	i := len(buf)
	for v >= 100 {
		q := v / 100
		j := (v - q*100) * 2
		i -= 2
		buf[i], buf[i+1] = digitPairs[j], digitPairs[j+1]
		v = q
	}
	if v >= 10 {
		i -= 2
		buf[i], buf[i+1] = digitPairs[v*2], digitPairs[v*2+1]
	} else {
		i--
		buf[i] = byte('0' + v)
	}
	return append(dst, buf[i:]...)
}

// AppendKVInt appends " key=v" for a signed v.
func AppendKVInt(dst []byte, key string, v int64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return strconv.AppendInt(dst, v, 10)
}

// AppendKVStr appends " key=" and v quoted.
func AppendKVStr(dst []byte, key, v string) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return strconv.AppendQuote(dst, v)
}

// AppendRecords appends how many records, the first offset and the body
// bytes: the records themselves are too long for a trace line.
func AppendRecords(dst []byte, recs []record.Record) []byte {
	if len(recs) == 0 {
		return append(dst, " recs=0"...)
	}
	dst = AppendKV(dst, "recs", uint64(len(recs)))
	dst = AppendKV(dst, "first", recs[0].Offset)
	var bytes int
	for i := range recs {
		bytes += len(recs[i].Body)
	}
	return AppendKV(dst, "bytes", uint64(bytes))
}

// AppendEpochs appends an epoch history as " epochs=[e@o ...]".
func AppendEpochs(dst []byte, h []EpochStart) []byte {
	dst = append(dst, " epochs=["...)
	for i, e := range h {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendUint(dst, e.Epoch, 10)
		dst = append(dst, '@')
		dst = strconv.AppendUint(dst, e.Offset, 10)
	}
	return append(dst, ']')
}

// AppendBatch appends what a metadata batch holds: its entries' index
// range and last term, its hard state, and the parts it has besides.
func AppendBatch(dst []byte, b *meta.Batch) []byte {
	if b == nil {
		return append(dst, " batch=nil"...)
	}
	if n := len(b.Entries); n > 0 {
		dst = AppendKV(dst, "ents", b.Entries[0].Index)
		dst = append(dst, ".."...)
		dst = AppendUint(dst, b.Entries[n-1].Index)
		dst = append(dst, '@')
		dst = AppendUint(dst, b.Entries[n-1].Term)
	}
	if hs := b.HardState; hs != nil {
		dst = AppendKV(dst, "hs.term", hs.Term)
		dst = AppendKV(dst, "hs.vote", hs.Vote)
		dst = AppendKV(dst, "hs.commit", hs.Commit)
	}
	if b.Snapshot != nil {
		dst = AppendKV(dst, "snap", b.Snapshot.Index)
	}
	if b.Applied != nil {
		dst = AppendKV(dst, "applied", b.Applied.Index)
	}
	if b.CompactIndex != 0 {
		dst = AppendKV(dst, "compact", b.CompactIndex)
	}
	return dst
}

// AppendMetaState appends a summary of what a metadata store loaded.
func AppendMetaState(dst []byte, st *meta.State) []byte {
	dst = AppendKV(dst, "meta.term", st.HardState.Term)
	dst = AppendKV(dst, "meta.vote", st.HardState.Vote)
	dst = AppendKV(dst, "meta.commit", st.HardState.Commit)
	dst = AppendKV(dst, "meta.first", st.Compacted.Index+1)
	return AppendKV(dst, "meta.ents", uint64(len(st.Entries)))
}
