package templates

import (
	"errors"
	"fmt"
	"reflect"
)

type builtinFunc func(args []reflect.Value) (reflect.Value, error)

// builtin returns text/template's predefined function name, for those
// Nova's templates use. A switch, not a map: a map would be built at
// package init, and every nova command runs every package's init.
func builtin(name string) builtinFunc {
	switch name {
	case "print":
		return printFunc
	case "eq":
		return eqFunc
	case "ne":
		return neFunc
	case "len":
		return lenFunc
	}
	return nil
}

func printFunc(args []reflect.Value) (reflect.Value, error) {
	in := make([]any, len(args))
	for i, a := range args {
		if a.IsValid() && a.CanInterface() {
			in[i] = a.Interface()
		}
	}
	return reflect.ValueOf(fmt.Sprint(in...)), nil
}

func lenFunc(args []reflect.Value) (reflect.Value, error) {
	if len(args) != 1 {
		return reflect.Value{}, fmt.Errorf("wrong number of args: got %d want 1", len(args))
	}
	v := indirect(args[0])
	switch v.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return reflect.ValueOf(v.Len()), nil
	case reflect.Invalid:
		return reflect.Value{}, errors.New("len of nil pointer")
	}
	return reflect.Value{}, fmt.Errorf("len of type %s", v.Type())
}

func neFunc(args []reflect.Value) (reflect.Value, error) {
	if len(args) != 2 {
		return reflect.Value{}, fmt.Errorf("wrong number of args: got %d want 2", len(args))
	}
	eq, err := equal(args[0], args[1])
	return reflect.ValueOf(!eq), err
}

// eqFunc is eq a b c...: whether a equals any of the others.
func eqFunc(args []reflect.Value) (reflect.Value, error) {
	if len(args) < 2 {
		return reflect.Value{}, errors.New("missing argument for comparison")
	}
	for _, b := range args[1:] {
		eq, err := equal(args[0], b)
		if err != nil || eq {
			return reflect.ValueOf(eq), err
		}
	}
	return reflect.ValueOf(false), nil
}

type kindClass int

const (
	otherKind kindClass = iota
	boolKind
	intKind
	uintKind
	floatKind
	complexKind
	stringKind
)

func classOf(v reflect.Value) kindClass {
	switch v.Kind() {
	case reflect.Bool:
		return boolKind
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind
	case reflect.Float32, reflect.Float64:
		return floatKind
	case reflect.Complex64, reflect.Complex128:
		return complexKind
	case reflect.String:
		return stringKind
	}
	return otherKind
}

// equal compares as text/template's eq: basic values by kind, signed and
// unsigned integers by value, anything else only with its own type.
func equal(a, b reflect.Value) (bool, error) {
	for a.Kind() == reflect.Interface && !a.IsNil() {
		a = a.Elem()
	}
	for b.Kind() == reflect.Interface && !b.IsNil() {
		b = b.Elem()
	}
	if !a.IsValid() || !b.IsValid() {
		return !a.IsValid() && !b.IsValid(), nil
	}
	ca, cb := classOf(a), classOf(b)
	if ca != cb {
		switch {
		case ca == intKind && cb == uintKind:
			return a.Int() >= 0 && uint64(a.Int()) == b.Uint(), nil
		case ca == uintKind && cb == intKind:
			return b.Int() >= 0 && a.Uint() == uint64(b.Int()), nil
		}
		return false, errors.New("incompatible types for comparison")
	}
	switch ca {
	case boolKind:
		return a.Bool() == b.Bool(), nil
	case intKind:
		return a.Int() == b.Int(), nil
	case uintKind:
		return a.Uint() == b.Uint(), nil
	case floatKind:
		return a.Float() == b.Float(), nil
	case complexKind:
		return a.Complex() == b.Complex(), nil
	case stringKind:
		return a.String() == b.String(), nil
	}
	if a.Type() != b.Type() || !a.Type().Comparable() || !a.CanInterface() || !b.CanInterface() {
		return false, fmt.Errorf("non-comparable types %s and %s", a.Type(), b.Type())
	}
	return a.Interface() == b.Interface(), nil
}

// arg returns args[i] as a T, for the typed wrappers of template
// functions.
func arg[T any](fn string, args []any, i, n int) (T, error) {
	var zero T
	if len(args) != n {
		return zero, fmt.Errorf("%s: wrong number of args: got %d want %d", fn, len(args), n)
	}
	v, ok := args[i].(T)
	if !ok {
		return zero, fmt.Errorf("%s: argument %d is %T, not %T", fn, i+1, args[i], zero)
	}
	return v, nil
}
