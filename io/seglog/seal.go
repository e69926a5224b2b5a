package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/io/vfs"
)

// The seal receipt (docs/design/recovery.md, "Seals"). A replica that seals its log for a recovery
// stores what it reported (the caller's bytes, opaque here) in the file
// SEAL beside the segments, checksummed, so that a restarted process
// answers a retry with its original seal and can tell whether the log
// still matches it. WriteSeal writes a temporary file, syncs it, renames
// it over SEAL and syncs the directory: after it returns, the receipt is
// durable, and a crash leaves the old receipt or the new, never a torn
// one. Open reads it back (Recovery.Seal) and reports a receipt that does
// not check (Recovery.SealDamage), never silently drops it.
//
// Layout: the magic "SLUICSEAL1", the payload's length (u32 little
// endian), the payload, and the CRC32C of everything before it (u32).

const (
	sealName     = "SEAL"
	sealTempName = "SEAL.tmp"
	sealMagic    = "SLUICSEAL1"
	sealBytesMax = 64 << 10 // a seal is a control message's size (and a binding's limit)
)

// ErrSealTooLarge: a receipt over its limit.
var ErrSealTooLarge = errors.New("seglog: seal receipt too large")

// WriteSeal durably stores receipt as the log's seal receipt, replacing
// any earlier one. It does not change the log's records.
func (l *Log) WriteSeal(receipt []byte) error {
	if err := l.usable(); err != nil {
		return err
	}
	if len(receipt) > sealBytesMax {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrSealTooLarge, len(receipt), sealBytesMax)
	}
	if err := l.writeReceipt(sealName, sealTempName, sealMagic, receipt); err != nil {
		return l.fail(err)
	}
	return nil
}

// readSeal reads the seal receipt, if any: its payload, or why it does not
// check.
func (l *Log) readSeal() (payload []byte, damage string, err error) {
	return l.readReceipt(sealName, sealMagic, "seal receipt", true)
}

// readReceipt reads the receipt file name (magic, payload length u32,
// payload, CRC32C u32), if any: its payload, or why it does not check
// (what names it). A read that fails (vfs.ErrIO) is damage when
// unreadableIsDamage, else the error.
func (l *Log) readReceipt(name, magic, what string, unreadableIsDamage bool) (payload []byte, damage string, err error) {
	f, err := l.fs.Open(l.segPath(name))
	if errors.Is(err, vfs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, "", err
	}
	fixed := len(magic) + 4 + 4
	if size < int64(fixed) || size > int64(fixed+sealBytesMax) {
		return nil, fmt.Sprintf("%s of %d bytes", what, size), nil
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		if errors.Is(err, vfs.ErrIO) && unreadableIsDamage {
			return nil, what + " unreadable", nil
		}
		return nil, "", err
	}
	n := int(binary.LittleEndian.Uint32(b[len(magic):]))
	switch {
	case string(b[:len(magic)]) != magic:
		return nil, what + " magic", nil
	case n != len(b)-fixed:
		return nil, fmt.Sprintf("%s says %d bytes, holds %d", what, n, len(b)-fixed), nil
	case crcUpdate(0, b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]):
		return nil, what + " checksum", nil
	}
	return b[len(magic)+4 : len(b)-4], "", nil
}

// writeReceipt durably stores payload as the receipt file name (as
// readReceipt reads it): a temporary file synced, renamed over it, the
// directory synced.
func (l *Log) writeReceipt(name, temp, magic string, payload []byte) error {
	return writeDurably(l.fs, l.dir, temp, name, receiptBytes(magic, payload))
}

// receiptBytes is a receipt file's contents.
func receiptBytes(magic string, payload []byte) []byte {
	b := make([]byte, 0, len(magic)+8+len(payload))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crcUpdate(0, b))
}
