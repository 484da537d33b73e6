// Package pushtest holds test support for push and the providers: the
// golden cases every provider pins, a golden-file comparison, and a generator
// of random notifications up to every contract limit. Only tests import it.
package pushtest
