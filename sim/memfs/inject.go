package memfs

// Op names an operation an Injector is consulted about.
type Op uint8

// The operations.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRemove
	OpRename
	OpMkdirAll
	OpList
	OpSyncDir
	OpRead     // File.ReadAt
	OpWrite    // File.WriteAt
	OpSync     // File.Sync
	OpTruncate // File.Truncate (Off: the new size)
	OpSize     // File.Size
	OpPreallocate
)

var opNames = [...]string{
	OpCreate: "create", OpOpen: "open", OpRemove: "remove", OpRename: "rename",
	OpMkdirAll: "mkdirall", OpList: "list", OpSyncDir: "syncdir", OpRead: "read",
	OpWrite: "write", OpSync: "sync", OpTruncate: "truncate", OpSize: "size",
	OpPreallocate: "preallocate",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// Access describes an operation about to be made.
type Access struct {
	Op    Op
	Name  string // the file or directory (for file operations: the name it was opened under)
	Name2 string // Rename: the new name
	Off   int64  // ReadAt, WriteAt: the offset; Truncate, Preallocate: the size
	Len   int    // ReadAt, WriteAt: the length
}

// Injector decides faults. Inject is called before every operation; a
// non-nil error is returned by the operation as is (wrap vfs.ErrIO,
// vfs.ErrNoSpace, ... so that callers can classify it), and the operation
// has no effect. An injected Sync failure leaves the file's unsynced
// operations pending, so a later crash may still lose them, unless
// SetSyncFailureDropsPages is set: then it settles them at once.
type Injector interface {
	Inject(a Access) error
}

// InjectorFunc adapts a function to an Injector.
type InjectorFunc func(a Access) error

// Inject implements Injector.
func (f InjectorFunc) Inject(a Access) error { return f(a) }
