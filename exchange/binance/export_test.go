package binance

// ErrorClasses exposes the code → class table to the tests.
func ErrorClasses() map[int]Class { return errorClasses }

// MessageClass is one row of messageClasses, for the doc-table test.
type MessageClass struct {
	Code  int
	Msg   string
	Class Class
}

func MessageClasses() []MessageClass {
	out := make([]MessageClass, 0, len(messageClasses))
	for _, m := range messageClasses {
		out = append(out, MessageClass{m.code, m.msg, m.class})
	}
	return out
}

func Classify(httpStatus, code int, msg string) Class { return classify(httpStatus, code, msg) }
