package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/io/vfs"
)

// The seal receipt (issue 11). A replica that seals its log for a recovery
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
	sealName       = "SEAL"
	sealTempName   = "SEAL.tmp"
	sealMagic      = "SLUICSEAL1"
	sealBytesMax   = 64 << 10 // a seal is a control message's size
	sealFixedBytes = len(sealMagic) + 4 + 4
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
	b := make([]byte, 0, sealFixedBytes+len(receipt))
	b = append(b, sealMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(receipt)))
	b = append(b, receipt...)
	b = binary.LittleEndian.AppendUint32(b, crcUpdate(0, b))
	if err := writeDurably(l.fs, l.dir, sealTempName, sealName, b); err != nil {
		return l.fail(err)
	}
	return nil
}

// readSeal reads the seal receipt, if any: its payload, or why it does not
// check.
func (l *Log) readSeal() (payload []byte, damage string, err error) {
	f, err := l.fs.Open(l.segPath(sealName))
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
	if size < int64(sealFixedBytes) || size > int64(sealFixedBytes+sealBytesMax) {
		return nil, fmt.Sprintf("seal receipt of %d bytes", size), nil
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		if errors.Is(err, vfs.ErrIO) {
			return nil, "seal receipt unreadable", nil
		}
		return nil, "", err
	}
	n := int(binary.LittleEndian.Uint32(b[len(sealMagic):]))
	switch {
	case string(b[:len(sealMagic)]) != sealMagic:
		return nil, "seal receipt magic", nil
	case n != len(b)-sealFixedBytes:
		return nil, fmt.Sprintf("seal receipt says %d bytes, holds %d", n, len(b)-sealFixedBytes), nil
	case crcUpdate(0, b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]):
		return nil, "seal receipt checksum", nil
	}
	return b[len(sealMagic)+4 : len(b)-4], "", nil
}
