package bugs

import "testing"

func TestRegistryCoversEveryBitOnce(t *testing.T) {
	var seen Set
	for i, b := range Registry {
		if b.Bit != 1<<i {
			t.Fatalf("registry entry %d (%s) has bit %#x, want %#x", i, b.Name, uint64(b.Bit), uint64(1)<<i)
		}
		if seen&b.Bit != 0 || b.Name == "" || b.Area == "" || b.Doc == "" {
			t.Fatalf("registry entry %d is malformed: %+v", i, b)
		}
		seen |= b.Bit
	}
	if seen != end-1 {
		t.Fatalf("registry covers %#x, constants cover %#x", uint64(seen), uint64(end-1))
	}
}

func TestParseRoundTrip(t *testing.T) {
	all := end - 1
	got, err := Parse(all.String())
	if err != nil || got != all {
		t.Fatalf("Parse(%q) = %v, %v", all.String(), got, err)
	}
	if s, err := Parse("none"); s != 0 || err != nil {
		t.Fatalf("none: %v %v", s, err)
	}
	if _, err := Parse("ack-before-sync,nope"); err == nil {
		t.Fatal("an unknown name must be refused")
	}
	if !(AckBeforeSync | SyncSkip).Has(SyncSkip) || AckBeforeSync.Has(SyncSkip) || Set(0).Has(0) {
		t.Fatal("Has is wrong")
	}
}
