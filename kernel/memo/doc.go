// Package memo holds bounded maps that, when full, forget a key not asked
// for lately: what a process remembers to spare work when the same input
// comes back (a receipt it recorded, a contract it compiled), without
// letting memory grow with everything it has ever seen, and without
// forgetting what it uses all the time for what came once.
package memo
