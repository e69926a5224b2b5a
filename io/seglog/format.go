package seglog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/record"
)

// On-disk format; see doc.go.
const (
	segMagic       = "SLUICSEG"
	segVersion     = 2
	segHeaderBytes = 32
	// slotBytes is the size of one header copy: offset u64, epoch u64,
	// frame CRC u32, frame length u32, kind u8, 3 zero bytes, CRC u32.
	slotBytes = 32
	// SlotsPerSegmentMax bounds the slots of a segment (and so the size of
	// its header-copy region, 32 MiB at most).
	SlotsPerSegmentMax = 1 << 20
	segSuffix          = ".seg"
	segNameDigits      = 20
	frameHeaderBytes   = 8         // length u32, crc u32
	framePayloadMin    = 8 + 8 + 1 // epoch, offset, kind
	framePayloadMax    = framePayloadMin + record.BodyBytesMax
	frameBytesMin      = frameHeaderBytes + framePayloadMin // an empty body
	frameBytesMax      = frameHeaderBytes + framePayloadMax
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segName is the file name of the segment whose first offset is base.
func segName(base uint64) string {
	return fmt.Sprintf("%0*d%s", segNameDigits, base, segSuffix)
}

// parseSegName returns the base offset named by a segment file name; ok is
// false for a name that is not a segment's.
func parseSegName(name string) (base uint64, ok bool, err error) {
	digits, found := strings.CutSuffix(name, segSuffix)
	if !found {
		return 0, false, nil
	}
	if len(digits) != segNameDigits {
		return 0, true, fmt.Errorf("seglog: malformed segment name %q", name)
	}
	base, err = strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("seglog: malformed segment name %q", name)
	}
	return base, true, nil
}

// putSegHeader encodes the header of a segment at base with the given
// number of header-copy slots into dst[:segHeaderBytes].
func putSegHeader(dst []byte, base uint64, slots int) {
	_ = dst[segHeaderBytes-1]
	assert(slots > 0 && slots <= SlotsPerSegmentMax, "segment slots out of range")
	copy(dst[0:8], segMagic)
	binary.LittleEndian.PutUint32(dst[8:12], segVersion)
	binary.LittleEndian.PutUint32(dst[12:16], uint32(slots))
	binary.LittleEndian.PutUint64(dst[16:24], base)
	binary.LittleEndian.PutUint32(dst[24:28], crc32.Checksum(dst[0:24], castagnoli))
	binary.LittleEndian.PutUint32(dst[28:32], 0)
}

// checkSegHeader validates a segment header and returns its slot count, or
// the reason it is bad.
func checkSegHeader(h []byte, base uint64) (slots int, reason string) {
	if string(h[0:8]) != segMagic {
		return 0, "bad segment magic"
	}
	if binary.LittleEndian.Uint32(h[24:28]) != crc32.Checksum(h[0:24], castagnoli) {
		return 0, "segment header crc mismatch"
	}
	if v := binary.LittleEndian.Uint32(h[8:12]); v != segVersion {
		return 0, "unsupported segment version " + strconv.FormatUint(uint64(v), 10) +
			" (this build reads version " + strconv.Itoa(segVersion) + " only)"
	}
	n := binary.LittleEndian.Uint32(h[12:16])
	if n == 0 || n > SlotsPerSegmentMax {
		return 0, "segment header slots " + strconv.FormatUint(uint64(n), 10) +
			" out of range [1, " + strconv.Itoa(SlotsPerSegmentMax) + "]"
	}
	if b := binary.LittleEndian.Uint64(h[16:24]); b != base {
		return 0, "segment header base " + strconv.FormatUint(b, 10) + " does not match its name"
	}
	return int(n), ""
}

// framesStart is the position of the first frame of a segment with the
// given number of slots: after the header and the header-copy region.
func framesStart(slots int) int64 { return segHeaderBytes + int64(slots)*slotBytes }

// slotPos is the position of slot i.
func slotPos(i int) int64 { return segHeaderBytes + int64(i)*slotBytes }

// slotSyncFirst, in a header copy's flags byte: its frame is the first the
// log appended after a completed sync (or its open), so every frame before
// it was durable when it was written; a valid copy with it beyond a damaged
// frame proves that frame was synced (Damage.Durable).
const slotSyncFirst byte = 1

// putSlot encodes the header copy of the frame fr (a whole, encoded frame),
// with flags, into dst[:slotBytes].
func putSlot(dst []byte, fr []byte, flags byte) {
	_ = dst[slotBytes-1]
	binary.LittleEndian.PutUint64(dst[0:8], binary.LittleEndian.Uint64(fr[16:24])) // offset
	binary.LittleEndian.PutUint64(dst[8:16], binary.LittleEndian.Uint64(fr[8:16])) // epoch
	copy(dst[16:20], fr[4:8])                                                      // frame CRC
	copy(dst[20:24], fr[0:4])                                                      // frame length
	dst[24] = fr[24]                                                               // kind
	dst[25], dst[26], dst[27] = flags, 0, 0
	binary.LittleEndian.PutUint32(dst[28:32], crc32.Checksum(dst[0:28], castagnoli))
}

// slotZero reports whether a slot is all zero ("no frame").
func slotZero(s []byte) bool {
	return binary.LittleEndian.Uint64(s[0:8])|binary.LittleEndian.Uint64(s[8:16])|
		binary.LittleEndian.Uint64(s[16:24])|binary.LittleEndian.Uint64(s[24:32]) == 0
}

// slotCRCOK checks a slot's own CRC (and that its padding is zero and its
// flags known).
func slotCRCOK(s []byte) bool {
	return s[25]&^slotSyncFirst == 0 && s[26]|s[27] == 0 &&
		binary.LittleEndian.Uint32(s[28:32]) == crc32.Checksum(s[0:28], castagnoli)
}

// slotOffset is the log offset a slot names.
func slotOffset(s []byte) uint64 { return binary.LittleEndian.Uint64(s[0:8]) }

// slotMatches reports whether a CRC-valid slot describes the whole frame fr:
// the same offset, epoch, CRC, length and kind.
func slotMatches(s, fr []byte) bool {
	le := binary.LittleEndian
	return le.Uint64(s[0:8]) == le.Uint64(fr[16:24]) && le.Uint64(s[8:16]) == le.Uint64(fr[8:16]) &&
		le.Uint32(s[16:20]) == le.Uint32(fr[4:8]) && le.Uint32(s[20:24]) == le.Uint32(fr[0:4]) && s[24] == fr[24]
}

// slotMatchesButCRC is slotMatches without the frame checksum (the planted
// bug bugs.NoCRCCheck).
func slotMatchesButCRC(s, fr []byte) bool {
	le := binary.LittleEndian
	return le.Uint64(s[0:8]) == le.Uint64(fr[16:24]) && le.Uint64(s[8:16]) == le.Uint64(fr[8:16]) &&
		le.Uint32(s[20:24]) == le.Uint32(fr[0:4]) && s[24] == fr[24]
}

// assert panics with msg when cond is false: a programmer error, never bad
// input (bad input gets an error or a Damage).
func assert(cond bool, msg string) {
	if !cond {
		panic("seglog: assertion failed: " + msg)
	}
}

// frameBytes is the size of the frame of a record with a body of n bytes.
func frameBytes(n int) int { return frameHeaderBytes + framePayloadMin + n }

// putFrameHeader encodes the fixed part of r's frame (everything but the
// body) into dst[:frameBytesMin] and returns the CRC state after it; the
// body must be fed to it and the result stored with finishFrame.
func putFrameHeader(dst []byte, r *record.Record) uint32 {
	_ = dst[frameBytesMin-1]
	binary.LittleEndian.PutUint32(dst[0:4], uint32(framePayloadMin+len(r.Body)))
	binary.LittleEndian.PutUint64(dst[8:16], r.Epoch)
	binary.LittleEndian.PutUint64(dst[16:24], r.Offset)
	dst[24] = byte(r.Kind)
	c := crc32.Update(0, castagnoli, dst[0:4])
	return crc32.Update(c, castagnoli, dst[8:frameBytesMin])
}

// putFrame encodes r's whole frame into dst[:frameBytes(len(r.Body))].
func putFrame(dst []byte, r *record.Record) {
	c := putFrameHeader(dst, r)
	copy(dst[frameBytesMin:], r.Body)
	c = crc32.Update(c, castagnoli, r.Body)
	binary.LittleEndian.PutUint32(dst[4:8], c)
}

// frameLen returns the payload length in a frame header and whether it is
// within bounds.
func frameLen(h []byte) (n int, ok bool) {
	v := binary.LittleEndian.Uint32(h[0:4])
	return int(v), v >= framePayloadMin && v <= framePayloadMax
}

// frameCRCOK checks the CRC of a whole frame fr (header and payload).
func frameCRCOK(fr []byte) bool {
	c := crc32.Update(0, castagnoli, fr[0:4])
	c = crc32.Update(c, castagnoli, fr[frameHeaderBytes:])
	return c == binary.LittleEndian.Uint32(fr[4:8])
}

// frameFields decodes the fixed fields of a whole frame.
func frameFields(fr []byte) (epoch, offset uint64, kind record.Kind, body []byte) {
	return binary.LittleEndian.Uint64(fr[8:16]), binary.LittleEndian.Uint64(fr[16:24]),
		record.Kind(fr[24]), fr[frameBytesMin:]
}

func crcUpdate(c uint32, p []byte) uint32 { return crc32.Update(c, castagnoli, p) }

func putU32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }
