package memfs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"path"
	"slices"

	"github.com/sluicemq/sluice/io/vfs"
)

// SectorBytes is the unit in which a crash keeps, loses or tears a pending
// write.
const SectorBytes = 4096

// errIsDir is returned (wrapped with vfs.ErrExist) when a file operation names
// a directory.
var errIsDir = errors.New("is a directory")

// FS is an in-memory vfs.FS. The zero value is not usable; use New.
type FS struct {
	// cur is the namespace every operation sees: directory path to entries.
	cur map[string]map[string]*node
	// dur is the durable namespace: what CrashClean would leave.
	dur map[string]map[string]*node
	// journal holds the pending directory operations, oldest first.
	journal []dirOp

	gen    uint64 // bumped by a crash; handles of older generations are dead
	durGen uint64 // bumped whenever the durable namespace may have changed
	// dirGen[d]: dirStamp at the last change of directory d's durable
	// entries (DurableDirGen); dirStamp counts the changes of any.
	dirGen   map[string]uint64
	dirStamp uint64
	// durLookup: the last durable file found, valid while durGen stays
	durLookup durLookup
	nodeNext  uint64 // id of the next node
	stamp     uint64 // the latest change stamp (changes.go)
	slab      chunkSlab
	// files holds every file node not freed (node.reg is its index), so
	// that a crash finds the files it leaves unreachable (recycle.go).
	files  []*node
	spares []spare // the memory of freed files, for new ones (recycle.go)
	// noRecycle: never free a file nor reuse a chunk (the reference the
	// tests compare recycling with; set with slab.noReuse).
	noRecycle bool

	inj         Injector
	usage       int64 // sum of footprint over files in cur
	capacity    int64 // 0: unlimited
	stats       Stats
	crashSector map[int64]bool // scratch for Crash
	// syncFailRand, when set, settles a file's pending operations when the
	// injector fails its Sync (SetSyncFailureDropsPages).
	syncFailRand Rand
}

// Stats counts the operations an FS has served (successful ones).
type Stats struct {
	Writes     int64 // WriteAt calls
	WriteBytes int64 // bytes written by WriteAt
	Syncs      int64 // File.Sync calls
	SyncDirs   int64 // SyncDir calls
	Truncates  int64 // File.Truncate calls
	Crashes    int64 // Crash and CrashClean calls

	// Recycling (recycle.go): files freed once unreachable, and the 4 KiB
	// content chunks carved from new memory or reused from freed files and
	// shrinks.
	FilesFreed      int64
	ChunksAllocated int64
	ChunksReused    int64
}

var _ vfs.FS = (*FS)(nil)

// node is a file or a directory.
type node struct {
	id    uint64
	isDir bool
	path  string // directories only: their path (directories never move)

	c        content  // file contents
	undo     []undoOp // pending operations since the last Sync, oldest first
	undoBuf  []byte   // bytes saved by the pending operations
	prealloc int64    // bytes reserved by Preallocate
	links    int      // names in cur referring to this file

	// What else can reach the file (recycle.go): it is freed, its chunks
	// given back, when links, durLinks, jrefs and opens are all zero.
	durLinks int // names in dur referring to this file
	jrefs    int // pending journal operations naming it (n or replaced)
	opens    int // open handles of the current generation
	reg      int // index in FS.files

	// synced holds the operations made durable by the most recent
	// successful Sync that had any (a suffix of that batch, within the
	// bounds of syncDone), oldest first, for LoseSyncedWrite; the bytes its
	// writes overwrote are in syncedBuf. They trade places with undo and
	// undoBuf at every Sync, so both are reused.
	synced    []undoOp
	syncedBuf []byte
	// unreadable holds the sticky unreadable ranges (the media), sorted
	// and disjoint, at most unreadableRangesMax.
	unreadable []span
	// changes: where the durable image changed lately (changes.go)
	changes []durChange
}

// footprint is the space a file occupies.
func (n *node) footprint() int64 { return max(n.c.size, n.prealloc) }

// dirOpKind is a kind of pending directory operation.
type dirOpKind uint8

const (
	dirCreate dirOpKind = iota + 1
	dirRemove
	dirRename
	dirMkdir
)

// dirOp is one pending directory operation.
type dirOp struct {
	kind     dirOpKind
	dir      string // target directory (create, remove, rename destination, mkdir parent)
	name     string // target name
	srcDir   string // rename source directory
	srcName  string // rename source name
	n        *node  // the file (or directory, for mkdir) concerned
	replaced *node  // rename: the file the target name referred to, or nil
}

// New returns an empty file system whose root directory exists durably.
func New() *FS {
	fs := &FS{
		cur:         map[string]map[string]*node{".": {}},
		dur:         map[string]map[string]*node{".": {}},
		crashSector: map[int64]bool{},
	}
	return fs
}

// clean normalises a name; "" and "." are the root.
func clean(op, name string) (string, error) {
	if name == "" {
		return ".", nil
	}
	if !iofs.ValidPath(name) {
		return "", fmt.Errorf("memfs: %s %q: invalid name", op, name)
	}
	return name, nil
}

func splitName(name string) (dir, base string) {
	return path.Dir(name), path.Base(name)
}

func notExist(op, name string) error {
	return fmt.Errorf("memfs: %s %s: %w", op, name, vfs.ErrNotExist)
}

func (fs *FS) inject(a Access) error {
	if fs.inj == nil {
		return nil
	}
	return fs.inj.Inject(a)
}

// lookupFile finds the file named name in cur.
func (fs *FS) lookupFile(op, name string) (*node, error) {
	dir, base := splitName(name)
	ents, ok := fs.cur[dir]
	if !ok {
		return nil, notExist(op, name)
	}
	n, ok := ents[base]
	if !ok {
		return nil, notExist(op, name)
	}
	if n.isDir {
		return nil, fmt.Errorf("memfs: %s %s: %w: %w", op, name, errIsDir, vfs.ErrExist)
	}
	n.c.mustLive() // a name refers to it: it cannot have been freed
	return n, nil
}

func (fs *FS) newFile(n *node, name string) *File {
	n.c.mustLive()
	n.opens++
	return &File{fs: fs, n: n, name: name, gen: fs.gen}
}

// Create implements vfs.FS.
func (fs *FS) Create(name string) (vfs.File, error) {
	name, err := clean("create", name)
	if err != nil {
		return nil, err
	}
	if err := fs.inject(Access{Op: OpCreate, Name: name}); err != nil {
		return nil, err
	}
	dir, base := splitName(name)
	ents, ok := fs.cur[dir]
	if !ok || name == "." {
		return nil, notExist("create", name)
	}
	if n, ok := ents[base]; ok {
		if n.isDir {
			return nil, fmt.Errorf("memfs: create %s: %w: %w", name, errIsDir, vfs.ErrExist)
		}
		n.truncate(fs, 0)
		return fs.newFile(n, name), nil
	}
	n := fs.newNode()
	ents[base] = n
	n.links = 1
	fs.logOp(dirOp{kind: dirCreate, dir: dir, name: base, n: n})
	return fs.newFile(n, name), nil
}

// Open implements vfs.FS.
func (fs *FS) Open(name string) (vfs.File, error) {
	name, err := clean("open", name)
	if err != nil {
		return nil, err
	}
	if err := fs.inject(Access{Op: OpOpen, Name: name}); err != nil {
		return nil, err
	}
	n, err := fs.lookupFile("open", name)
	if err != nil {
		return nil, err
	}
	return fs.newFile(n, name), nil
}

// unlink drops one cur reference to n.
func (fs *FS) unlink(n *node) {
	n.links--
	if n.links == 0 {
		fs.usage -= n.footprint()
	}
}

// Remove implements vfs.FS. Only files can be removed.
func (fs *FS) Remove(name string) error {
	name, err := clean("remove", name)
	if err != nil {
		return err
	}
	if err := fs.inject(Access{Op: OpRemove, Name: name}); err != nil {
		return err
	}
	n, err := fs.lookupFile("remove", name)
	if err != nil {
		return err
	}
	dir, base := splitName(name)
	delete(fs.cur[dir], base)
	fs.unlink(n)
	fs.logOp(dirOp{kind: dirRemove, dir: dir, name: base, n: n})
	if testFreeEarly != nil {
		testFreeEarly(fs, n)
	}
	return nil
}

// Rename implements vfs.FS. Only files can be renamed.
func (fs *FS) Rename(oldName, newName string) error {
	oldName, err := clean("rename", oldName)
	if err != nil {
		return err
	}
	newName, err = clean("rename", newName)
	if err != nil {
		return err
	}
	if err := fs.inject(Access{Op: OpRename, Name: oldName, Name2: newName}); err != nil {
		return err
	}
	n, err := fs.lookupFile("rename", oldName)
	if err != nil {
		return err
	}
	dstDir, dstBase := splitName(newName)
	dst, ok := fs.cur[dstDir]
	if !ok || newName == "." {
		return notExist("rename", newName)
	}
	replaced := dst[dstBase]
	if replaced != nil && replaced.isDir {
		return fmt.Errorf("memfs: rename %s %s: %w: %w", oldName, newName, errIsDir, vfs.ErrExist)
	}
	if replaced == n {
		return nil // same file: nothing to do
	}
	srcDir, srcBase := splitName(oldName)
	delete(fs.cur[srcDir], srcBase)
	dst[dstBase] = n
	if replaced != nil {
		fs.unlink(replaced)
	}
	fs.logOp(dirOp{
		kind: dirRename, dir: dstDir, name: dstBase, srcDir: srcDir, srcName: srcBase,
		n: n, replaced: replaced,
	})
	return nil
}

// MkdirAll implements vfs.FS.
func (fs *FS) MkdirAll(dir string) error {
	dir, err := clean("mkdir", dir)
	if err != nil {
		return err
	}
	if err := fs.inject(Access{Op: OpMkdirAll, Name: dir}); err != nil {
		return err
	}
	var missing []string
	for d := dir; d != "."; d = path.Dir(d) {
		if _, ok := fs.cur[d]; ok {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		parent, base := splitName(d)
		if n, ok := fs.cur[parent][base]; ok && !n.isDir {
			return fmt.Errorf("memfs: mkdir %s: not a directory: %w", d, vfs.ErrExist)
		}
		n := &node{id: fs.nodeNext, isDir: true, path: d}
		fs.nodeNext++
		fs.cur[parent][base] = n
		fs.cur[d] = map[string]*node{}
		fs.logOp(dirOp{kind: dirMkdir, dir: parent, name: base, n: n})
	}
	return nil
}

// List implements vfs.FS.
func (fs *FS) List(dir string) ([]string, error) {
	dir, err := clean("list", dir)
	if err != nil {
		return nil, err
	}
	if err := fs.inject(Access{Op: OpList, Name: dir}); err != nil {
		return nil, err
	}
	ents, ok := fs.cur[dir]
	if !ok {
		return nil, notExist("list", dir)
	}
	return slices.Sorted(maps.Keys(ents)), nil
}

// touches reports the directories and nodes a journal operation concerns.
func (op *dirOp) touches(dirs map[string]bool, nodes map[*node]bool) bool {
	if dirs[op.dir] || (op.kind == dirRename && dirs[op.srcDir]) {
		return true
	}
	if op.kind == dirMkdir && dirs[op.n.path] {
		return true
	}
	return nodes[op.n] || (op.replaced != nil && nodes[op.replaced])
}

func (op *dirOp) addKeys(dirs map[string]bool, nodes map[*node]bool) {
	dirs[op.dir] = true
	if op.kind == dirRename {
		dirs[op.srcDir] = true
	}
	if op.kind == dirMkdir {
		dirs[op.n.path] = true
	}
	nodes[op.n] = true
	if op.replaced != nil {
		nodes[op.replaced] = true
	}
}

// apply replays a journal operation onto the durable namespace, counting
// the durable names of the files (node.durLinks); a file that loses its
// last reference there is freed.
func (fs *FS) apply(op *dirOp) {
	ns := fs.dur
	fs.dirChanged(op.dir)
	ents := ns[op.dir]
	if ents == nil {
		// Cannot happen: an operation's directory is made by an earlier
		// operation it depends on. Be robust anyway.
		ents = map[string]*node{}
		ns[op.dir] = ents
	}
	switch op.kind {
	case dirCreate:
		fs.setDur(ents, op.name, op.n)
	case dirRemove:
		if ents[op.name] == op.n {
			fs.setDur(ents, op.name, nil)
		}
	case dirRename:
		// The target first: the file keeps a durable name throughout.
		src := ns[op.srcDir]
		fs.dirChanged(op.srcDir)
		fs.setDur(ents, op.name, op.n)
		if src != nil && src[op.srcName] == op.n && (op.srcDir != op.dir || op.srcName != op.name) {
			fs.setDur(src, op.srcName, nil)
		}
	case dirMkdir:
		fs.setDur(ents, op.name, op.n)
		fs.dirChanged(op.n.path)
		if ns[op.n.path] == nil {
			ns[op.n.path] = map[string]*node{}
		}
	}
}

// setDur sets (n nil: deletes) the durable entry name of ents, keeping
// the durable link counts; the file it referred to before is freed if
// nothing else reaches it.
func (fs *FS) setDur(ents map[string]*node, name string, n *node) {
	old := ents[name]
	if old == n {
		return
	}
	if n != nil {
		ents[name] = n
		if !n.isDir {
			n.c.mustLive() // a pending operation names it
			n.durLinks++
		}
	} else {
		delete(ents, name)
	}
	if old != nil && !old.isDir {
		old.durLinks--
		if old.durLinks < 0 {
			panic("memfs: negative durable link count")
		}
		fs.release(old)
	}
}

// SyncDir implements vfs.FS.
func (fs *FS) SyncDir(dir string) error {
	dir, err := clean("syncdir", dir)
	if err != nil {
		return err
	}
	if err := fs.inject(Access{Op: OpSyncDir, Name: dir}); err != nil {
		return err
	}
	if _, ok := fs.cur[dir]; !ok {
		return notExist("syncdir", dir)
	}
	fs.stats.SyncDirs++
	if len(fs.journal) == 0 {
		return nil
	}
	dirs := map[string]bool{dir: true}
	nodes := map[*node]bool{}
	commit := make([]bool, len(fs.journal))
	committed := false
	for i := len(fs.journal) - 1; i >= 0; i-- {
		op := &fs.journal[i]
		if op.touches(dirs, nodes) {
			commit[i] = true
			committed = true
			op.addKeys(dirs, nodes)
		}
	}
	if !committed {
		return nil
	}
	fs.durGen++
	kept := fs.journal[:0]
	for i := range fs.journal {
		if op := fs.journal[i]; commit[i] {
			fs.apply(&op)
			fs.unref(&op) // the operation leaves the journal
		} else {
			kept = append(kept, op)
		}
	}
	clear(fs.journal[len(kept):])
	fs.journal = kept
	return nil
}

// DurableGen returns a number that changes whenever the durable namespace
// may have changed (a directory sync, a crash): a reader of DurableList
// need not list again while it stays the same.
func (fs *FS) DurableGen() uint64 { return fs.durGen }

// DurableDirGen returns a number that changes whenever dir's durable
// entries may have changed (an entry made durable, removed or renamed in
// or out of it, the directory made): a reader of DurableList(dir) need not
// list again while it stays the same, however busy the rest of the disk.
func (fs *FS) DurableDirGen(dir string) uint64 {
	if dir == "" {
		dir = "."
	}
	return fs.dirGen[dir]
}

// dirChanged notes a change of dir's durable entries.
func (fs *FS) dirChanged(dir string) {
	if fs.dirGen == nil {
		fs.dirGen = map[string]uint64{}
	}
	fs.dirStamp++
	fs.dirGen[dir] = fs.dirStamp
}

// SetInjector installs the fault injector consulted before every operation;
// nil removes it.
func (fs *FS) SetInjector(i Injector) { fs.inj = i }

// SetCapacity limits the total footprint of the files (sum over files of the
// larger of size and preallocation) to bytes; writes, truncations and
// preallocations past it fail with vfs.ErrNoSpace. 0 means unlimited.
func (fs *FS) SetCapacity(bytes int64) { fs.capacity = bytes }

// Usage returns the total footprint of the files in the namespace.
func (fs *FS) Usage() int64 { return fs.usage }

// Stats returns the operation counters.
func (fs *FS) Stats() Stats {
	st := fs.stats
	st.ChunksAllocated, st.ChunksReused = fs.slab.allocated, fs.slab.reused
	return st
}

// reserve checks that growing n's footprint to fp fits the capacity and
// accounts for it.
func (fs *FS) reserve(n *node, fp int64) error {
	old := n.footprint()
	if fp <= old || n.links == 0 {
		return nil
	}
	if fs.capacity > 0 && fs.usage+fp-old > fs.capacity {
		return vfs.ErrNoSpace
	}
	return nil
}

// account updates usage after n's footprint changed from old.
func (fs *FS) account(n *node, old int64) {
	if n.links > 0 {
		fs.usage += n.footprint() - old
	}
}

// Bytes returns a copy of the current contents of the named file (synced or
// not).
func (fs *FS) Bytes(name string) ([]byte, error) {
	name, err := clean("bytes", name)
	if err != nil {
		return nil, err
	}
	n, err := fs.lookupFile("bytes", name)
	if err != nil {
		return nil, err
	}
	return n.c.bytes(), nil
}

// lookupDurable finds the file that the durable entry name refers to.
func (fs *FS) lookupDurable(op, name string) (*node, error) {
	// The checkers read the same durable file again and again: remember the
	// last one found while the durable namespace stays the same.
	if c := &fs.durLookup; c.n != nil && c.gen == fs.durGen && c.name == name {
		c.n.c.mustLive()
		return c.n, nil
	}
	n, err := fs.lookupDurableSlow(op, name)
	if err == nil {
		fs.durLookup = durLookup{name: name, gen: fs.durGen, n: n}
	}
	return n, err
}

// durLookup is lookupDurable's one-entry cache.
type durLookup struct {
	name string
	gen  uint64
	n    *node
}

func (fs *FS) lookupDurableSlow(op, name string) (*node, error) {
	name, err := clean(op, name)
	if err != nil {
		return nil, err
	}
	dir, base := splitName(name)
	n := fs.dur[dir][base]
	if n == nil {
		return nil, notExist(op, name)
	}
	if n.isDir {
		return nil, fmt.Errorf("memfs: %s %s: %w: %w", op, name, errIsDir, vfs.ErrExist)
	}
	n.c.mustLive() // a durable name refers to it: it cannot have been freed
	return n, nil
}

// DurableBytes returns what CrashClean would leave under name: the synced
// contents of the file its durable directory entry refers to. It fails with
// vfs.ErrNotExist when the entry is not durable.
func (fs *FS) DurableBytes(name string) ([]byte, error) {
	n, err := fs.lookupDurable("durablebytes", name)
	if err != nil {
		return nil, err
	}
	return n.durableContents(), nil
}

// Corrupt flips the lowest bit of the byte at off of the durable contents
// under name (the bytes DurableBytes returns), as bit rot would. The current
// contents change too unless a pending write covers the byte.
func (fs *FS) Corrupt(name string, off int64) error {
	return fs.CorruptMask(name, off, 1)
}

// CorruptMask is Corrupt with the bits to flip given by mask.
func (fs *FS) CorruptMask(name string, off int64, mask byte) error {
	n, err := fs.lookupDurable("corrupt", name)
	if err != nil {
		return err
	}
	p := n.durableByte(off)
	if p == nil {
		return fmt.Errorf("memfs: corrupt %s at %d: beyond the durable size", name, off)
	}
	*p ^= mask
	n.noteChange(fs.nextStamp(), off, off+1)
	return nil
}
