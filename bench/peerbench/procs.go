package main

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one process peerbench started: its own process group, its
// output in a log file, a goroutine (owned by the proc) that waits for it.
// stop ends it and every descendant, by pid, and waits.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

// procs is the registry of everything started, stopped in reverse order
// by stopAll on every exit path.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// start runs argv with its output appended to logPath. With cg, a shell
// writes its own pid into the cgroup and then execs argv, so the process
// is inside the cgroup before it runs (and before it forks workers).
func (ps *procs) start(name string, cg *cgroup, logPath string, env []string, argv ...string) (*proc, error) {
	if cg != nil {
		argv = append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procsFile()}, argv...)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("peerbench: %s log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	// Own group so stop can signal the whole tree; SIGKILL if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("peerbench: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		_ = cmd.Wait()
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group (the started process and every
// descendant that kept its group: nginx workers, Varnish's child), waits up
// to 10 s, then SIGKILLs the group.
func (p *proc) stop() {
	defer p.log.Close()
	if p.alive() {
		_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			fmt.Fprintf(os.Stderr, "peerbench: %s (pid %d) ignored SIGTERM, killing\n", p.name, p.pid())
		}
	}
	// Whatever of the group outlived its leader, or ignored SIGTERM.
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.exited
}

func (ps *procs) stopAll() {
	ps.mu.Lock()
	list := ps.list
	ps.list = nil
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop()
	}
}
