package core

import (
	"strconv"

	"github.com/sluicemq/sluice/core/record"
)

// The stable text forms below are part of the contract: traces, golden files
// and trace hashes are made of them. Change them only on purpose.

func appendKV(dst []byte, key string, v uint64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return strconv.AppendUint(dst, v, 10)
}

func appendKVInt(dst []byte, key string, v int64) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return strconv.AppendInt(dst, v, 10)
}

func appendKVStr(dst []byte, key, v string) []byte {
	dst = append(dst, ' ')
	dst = append(dst, key...)
	dst = append(dst, '=')
	return strconv.AppendQuote(dst, v)
}

func appendRecords(dst []byte, recs []record.Record) []byte {
	if len(recs) == 0 {
		return append(dst, " recs=0"...)
	}
	dst = appendKV(dst, "recs", uint64(len(recs)))
	dst = appendKV(dst, "first", recs[0].Offset)
	var bytes int
	for i := range recs {
		bytes += len(recs[i].Body)
	}
	return appendKV(dst, "bytes", uint64(bytes))
}

func appendEpochs(dst []byte, h []EpochStart) []byte {
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
