package venuekit

// CodeClass is one row of a venue's error table: a code the venue answers,
// what it means for the order, and the venue's message, shortened. Each
// adapter declares its own CodeClass with these fields (its table is
// written as unkeyed rows); Row admits them all.
type CodeClass struct {
	Code    int
	Class   Class
	Meaning string
}

// Row is any adapter's CodeClass.
type Row interface {
	~struct {
		Code    int
		Class   Class
		Meaning string
	}
}

// Rows converts an adapter's table to CodeClass rows.
func Rows[R Row](table []R) []CodeClass {
	out := make([]CodeClass, len(table))
	for i, r := range table {
		out[i] = CodeClass(r)
	}
	return out
}

// ClassOf is the class table gives code, or unlisted when the table does
// not list it: what an unlisted code means is the venue's rule (unknown
// unless the venue documents that any non-zero code did nothing), so
// each adapter says it where it classifies.
func ClassOf[R Row](table []R, code int, unlisted Class) Class {
	for _, r := range table {
		if row := CodeClass(r); row.Code == code {
			return row.Class
		}
	}
	return unlisted
}
