// Package memo holds bounded maps that forget their oldest key when full:
// what a process remembers to spare work when the same input comes back
// (a receipt it recorded, a contract it compiled), without letting memory
// grow with everything it has ever seen.
package memo
