package daemon

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// identity is what a data directory is: the node it belongs to and its
// storage instance, drawn once when the directory is created.
type identity struct {
	Node    uint32
	Storage uint64
}

// openDataDir creates the data directory if new (drawing its storage
// instance), checks it belongs to node, and makes this start's process
// instance durable: one more than the last start's.
func openDataDir(dir string, node uint32) (identity, uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return identity{}, 0, err
	}
	idPath := filepath.Join(dir, "identity")
	b, err := os.ReadFile(idPath)
	var id identity
	switch {
	case errors.Is(err, os.ErrNotExist):
		id = identity{Node: node, Storage: randNonZero()}
		text := fmt.Sprintf("node=%d storage=%d\n", id.Node, id.Storage)
		if err := writeDurable(dir, "identity", []byte(text)); err != nil {
			return identity{}, 0, err
		}
	case err != nil:
		return identity{}, 0, err
	default:
		id, err = parseIdentity(string(b))
		if err != nil {
			return identity{}, 0, fmt.Errorf("%s: %w", idPath, err)
		}
		if id.Node != node {
			return identity{}, 0, fmt.Errorf("%s belongs to node %d, not %d", dir, id.Node, node)
		}
	}
	var last uint64
	b, err = os.ReadFile(filepath.Join(dir, "process"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return identity{}, 0, err
	default:
		last, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return identity{}, 0, fmt.Errorf("%s: process counter: %w", dir, err)
		}
	}
	process := last + 1
	if err := writeDurable(dir, "process", []byte(strconv.FormatUint(process, 10)+"\n")); err != nil {
		return identity{}, 0, err
	}
	return id, process, nil
}

func parseIdentity(s string) (identity, error) {
	var id identity
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return id, errors.New("want node=N storage=S")
	}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return id, fmt.Errorf("%s: %w", k, err)
		}
		switch k {
		case "node":
			if n == 0 || n > 1<<32-1 {
				return id, fmt.Errorf("node %d out of range", n)
			}
			id.Node = uint32(n)
		case "storage":
			id.Storage = n
		default:
			return id, fmt.Errorf("unknown field %q", k)
		}
	}
	if id.Node == 0 || id.Storage == 0 {
		return id, errors.New("node and storage must be non-zero")
	}
	return id, nil
}

// writeDurable replaces dir/name with data: a temporary file written and
// fdatasynced, renamed over the name, and the directory synced.
func writeDurable(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// randNonZero draws a non-zero 64-bit value from crypto/rand.
func randNonZero() uint64 {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic("daemon: crypto/rand: " + err.Error())
		}
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}
