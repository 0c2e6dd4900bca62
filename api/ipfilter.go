package api

import (
	"fmt"
	"net/netip"
	"strings"
)

// TradingViewIPs are the addresses TradingView sends webhooks from.
var tradingViewIPs = []string{"52.89.214.238", "34.212.75.30", "54.218.53.128", "52.32.178.7"}

// IPList is a set of address prefixes. The empty list allows every address.
type IPList []netip.Prefix

// ParseIPList reads a comma-separated list of CIDRs or addresses; the word
// "tradingview" stands for TradingView's sender addresses.
func ParseIPList(s string) (IPList, error) {
	var out IPList
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case strings.EqualFold(f, "tradingview"):
			for _, a := range tradingViewIPs {
				out = append(out, netip.PrefixFrom(netip.MustParseAddr(a), 32))
			}
		case strings.Contains(f, "/"):
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("parse CIDR %q: %w", f, err)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("parse address %q: %w", f, err)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// Allows reports whether ip is in the list, or the list is empty.
func (l IPList) Allows(ip netip.Addr) bool {
	if len(l) == 0 {
		return true
	}
	return l.Contains(ip)
}

// Contains reports whether ip is in the list.
func (l IPList) Contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range l {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
