// Package monorepo finds every contract in a repository and chooses the
// ones a change touches: the first step of running many contracts at once,
// in one process or fanned out across a forge's runners.
//
// A contract is a file `.nova/contract.yml`, or `.nova/<name>.contract.yml`
// where one directory holds several; the directory above `.nova` is the
// contract's directory, which its run treats as its checkout (policies,
// config, test reports and approvers are read there). Discovery reads each
// contract only far enough to know its id, environment and stack; judging
// it is the run's job, so a contract that cannot be read is still listed
// and its own run reports why.
package monorepo

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// Names that make a file a contract.
const (
	novaDir        = ".nova"
	contractFile   = "contract.yml"
	contractSuffix = ".contract.yml"
	// runsDir holds a checkout's run artefacts (runner/local.RunsDir):
	// bundles may contain copies of anything, never a contract to run.
	runsDir = ".nova/runs"
)

// maxContractBytes bounds what discovery reads of one contract, as the
// schema stage bounds the contract it loads.
const maxContractBytes = 1 << 20

// Contract is one contract file found under a root.
type Contract struct {
	// Dir is the contract's directory, slash-separated and relative to
	// the root ("." for the root itself).
	Dir string `json:"dir"`
	// File is the contract file relative to Dir: ".nova/contract.yml" or
	// ".nova/<name>.contract.yml".
	File string `json:"contract"`
	// ID, Environment and Stack are as the file declares them, unchecked.
	ID          string `json:"id"`
	Environment string `json:"environment"`
	Stack       string `json:"stack,omitempty"`
	// Err is why the file could not be read far enough to know its id;
	// the contract is run anyway, and the run says what is wrong.
	Err error `json:"-"`
	// blob is the git blob id of the bytes Discover read, zero when it
	// read none: a base contract with this blob at this path is this
	// contract, and needs no reading or parsing of its own (Changed).
	blob plumbing.Hash
}

// Path is the contract file relative to the root, slash-separated.
func (c Contract) Path() string { return path.Join(c.Dir, c.File) }

// IsContractFile reports whether a slash-separated path relative to a root
// names a contract file.
func IsContractFile(p string) bool {
	dir, name := path.Split(p)
	if path.Base(strings.TrimSuffix(dir, "/")) != novaDir || dir == "" {
		return false
	}
	return name == contractFile || (strings.HasSuffix(name, contractSuffix) && len(name) > len(contractSuffix))
}

// split turns a contract file's root-relative path into its directory and
// its path below that directory.
func split(p string) (dir, file string) {
	nova := path.Dir(p)
	return path.Dir(nova), path.Join(novaDir, path.Base(p))
}

// skipDir reports whether a directory is never searched: git's own data,
// and the runs a checkout keeps.
func skipDir(p string) bool {
	return path.Base(p) == ".git" || p == runsDir || strings.HasSuffix(p, "/"+runsDir)
}

// Discover lists every contract under root, ordered by path. It follows the
// checkout rule (runner/checkout): a symbolic link to a directory is never
// descended, so discovery cannot leave the root or loop, and a contract
// file that is a link is read only if it resolves inside the root. Two
// contracts declaring the same id are an error naming both files.
func Discover(root string) ([]Contract, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, runner.Errorf(runner.ContractDiscoveryFailed, "opening %s to look for contracts: %w", root, err)
	}
	defer r.Close()
	// Each contract is read and parsed as soon as the walk finds it, on
	// every CPU, while the walk goes on: parsing is most of a discovery's
	// time in a repository of thousands, the walk most of the rest, and
	// neither waits for the other.
	found := make(chan string, 256)
	read := make([][]Contract, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range read {
		wg.Go(func() {
			for p := range found {
				data, err := checkout.ReadFile(root, p, maxContractBytes)
				c := identify(p, data, err)
				if err == nil {
					c.blob = plumbing.ComputeHash(plumbing.BlobObject, data)
				}
				read[w] = append(read[w], c)
			}
		})
	}
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && skipDir(p) {
				return fs.SkipDir
			}
			return nil
		}
		if IsContractFile(p) {
			found <- p
		}
		return nil
	})
	close(found)
	wg.Wait()
	if err != nil {
		return nil, runner.Errorf(runner.ContractDiscoveryFailed, "looking for contracts under %s: %w", root, err)
	}
	contracts := []Contract{}
	for _, r := range read {
		contracts = append(contracts, r...)
	}
	sort.Slice(contracts, func(i, j int) bool { return contracts[i].Path() < contracts[j].Path() })
	if err := checkDuplicates(contracts); err != nil {
		return nil, err
	}
	return contracts, nil
}

// identifyAll returns identify(i) for 0..n-1, on every CPU: reading and
// parsing each contract is most of a selection's time in a repository of
// thousands, and each is independent of the others.
func identifyAll(n int, identify func(i int) Contract) []Contract {
	out := make([]Contract, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				out[i] = identify(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// identity is the part of a contract discovery reads; anything else,
// valid or not, is the schema stage's to judge.
type identity struct {
	ID          string `yaml:"id"`
	Environment string `yaml:"environment"`
	Stack       string `yaml:"stack"`
}

// identify builds the Contract for the file at p from its contents, or
// from why they could not be read.
func identify(p string, data []byte, readErr error) Contract {
	dir, file := split(p)
	c := Contract{Dir: dir, File: file}
	if readErr != nil {
		c.Err = readErr
		return c
	}
	var id identity
	if err := yaml.Unmarshal(data, &id); err != nil {
		c.Err = fmt.Errorf("reading the id of %s: %w", p, err)
		return c
	}
	c.ID, c.Environment, c.Stack = strings.TrimSpace(id.ID), id.Environment, id.Stack
	if c.ID == "" {
		c.Err = fmt.Errorf("%s declares no id", p)
	}
	return c
}

// checkDuplicates refuses two contracts with one id: they would plan
// against one state and write one evidence chain, each undoing the other.
func checkDuplicates(cs []Contract) error {
	first := map[string]string{}
	var dups []string
	for _, c := range cs {
		if c.ID == "" {
			continue
		}
		if prev, seen := first[c.ID]; seen {
			dups = append(dups, fmt.Sprintf("contract id %s is declared by both %s and %s", c.ID, prev, c.Path()))
			continue
		}
		first[c.ID] = c.Path()
	}
	if len(dups) == 0 {
		return nil
	}
	return runner.Errorf(runner.ContractIDDuplicate, "%s; give each contract its own id", strings.Join(dups, "; "))
}

// Pick reads the contracts at the given root-relative, slash-separated
// paths, as Discover would have found them: a job of a sharded fan-out
// runs the contracts its shard lists rather than discovering them again,
// so the contracts it runs are exactly those the selection put in its
// shard. A path that is not a contract file's, or leaves the root, is an
// error; a file that cannot be read is listed with its Err, for its run
// to report. Two paths declaring one id are an error, as in Discover.
func Pick(root string, paths []string) ([]Contract, error) {
	picked := make([]Contract, 0, len(paths))
	for _, p := range paths {
		if !IsContractFile(p) || !fs.ValidPath(p) {
			return nil, runner.Errorf(runner.ShardInvalid, "%q is not a contract file relative to %s (.nova/contract.yml or .nova/<name>.contract.yml)", p, root)
		}
		data, err := checkout.ReadFile(root, p, maxContractBytes)
		picked = append(picked, identify(p, data, err))
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].Path() < picked[j].Path() })
	if err := checkDuplicates(picked); err != nil {
		return nil, err
	}
	return picked, nil
}
