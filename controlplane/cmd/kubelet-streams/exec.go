package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// processExecutor runs one exec request's command behind its target's prefix.
//
// Which streams the client asked for comes from the request's options, not from which
// streams are nil: over WebSocket the streams a client did not ask for exist but are ignored.
type processExecutor struct {
	target execTarget
	opts   remotecommand.Options
}

var _ remotecommand.Executor = (*processExecutor)(nil)

// ExecInContainer runs the command to its end. A non-zero exit is returned as an ExitError, which
// ServeExec reports as the NonZeroExitCode status clients turn into the command's exit code.
func (e *processExecutor) ExecInContainer(
	_ context.Context, _, _, _ string, cmd []string,
	in io.Reader, out, errOut io.WriteCloser, tty bool,
	resize <-chan remotecommand.TerminalSize, _ time.Duration,
) error {
	argv := append(slices.Clone(e.target.Argv), cmd...)
	process := exec.Command(argv[0], argv[1:]...)
	process.Env = environment(e.target.Env, tty)
	var stdin io.Reader
	if e.opts.Stdin {
		stdin = in
	}
	var stdout, stderr io.Writer
	if e.opts.Stdout {
		stdout = out
	}
	if e.opts.Stderr && !tty {
		stderr = errOut
	}
	var err error
	if tty {
		err = runTerminal(process, stdin, stdout, resize)
	} else {
		err = runPiped(process, stdin, stdout, stderr)
	}
	return exitStatus(err)
}

// environment is the container's environment, sorted so a process sees it in a stable order.
// A terminal session gets TERM when the container has none, as container runtimes give one,
// because shells and editors cannot draw without it.
func environment(env map[string]string, tty bool) []string {
	list := make([]string, 0, len(env)+1)
	for name, value := range env {
		list = append(list, name+"="+value)
	}
	if _, ok := env["TERM"]; tty && !ok {
		list = append(list, "TERM=xterm")
	}
	sort.Strings(list)
	return list
}

// runPiped runs a command with plain pipes. Its input is copied by a goroutine of its own that
// Wait does not wait for: a command that exits without reading its input must not wait for the
// client to close it.
func runPiped(process *exec.Cmd, in io.Reader, out, errOut io.Writer) error {
	process.Stdout, process.Stderr = out, errOut
	var input io.WriteCloser
	if in != nil {
		var err error
		if input, err = process.StdinPipe(); err != nil {
			return err
		}
	}
	if err := process.Start(); err != nil {
		return err
	}
	if input != nil {
		go func() {
			_, _ = io.Copy(input, in)
			_ = input.Close() // end of the client's input: the command reads EOF
		}()
	}
	return process.Wait()
}

// runTerminal runs a command as the session leader of a new pseudo-terminal, resized as the
// client's terminal is. When the client's input ends (it went away), the terminal is hung up:
// closing it sends SIGHUP to the session, as closing a terminal window does.
func runTerminal(process *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	file, err := pty.Start(process)
	if err != nil {
		return err
	}
	terminal := &terminal{file: file}
	defer terminal.hangUp()
	go func() {
		for size := range resize {
			terminal.resize(size)
		}
	}()
	if in != nil {
		go func() {
			_, _ = io.Copy(file, in)
			terminal.hangUp()
		}()
	}
	if out == nil {
		out = io.Discard
	}
	copied := make(chan struct{})
	go func() {
		// Ends with EIO once every process holding the terminal has closed it.
		_, _ = io.Copy(out, file)
		close(copied)
	}()
	err = process.Wait()
	<-copied
	return err
}

// terminal is the controlling side of a pseudo-terminal. Reading and writing may race with
// closing it (os.File allows that), but a resize uses the bare descriptor, which a close
// could hand to the next file opened: the lock keeps the two apart.
type terminal struct {
	mu     sync.Mutex
	file   *os.File
	closed bool
}

func (t *terminal) resize(size remotecommand.TerminalSize) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		_ = pty.Setsize(t.file, &pty.Winsize{Rows: size.Height, Cols: size.Width})
	}
}

func (t *terminal) hangUp() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		_ = t.file.Close()
	}
}

// exitStatus turns a command's non-zero exit into the ExitError cri-streaming reports as an
// exit code. A command killed by a signal exits 128+signal, as container runtimes report it.
func exitStatus(err error) error {
	var exited *exec.ExitError
	if !errors.As(err, &exited) {
		return err
	}
	code := exited.ExitCode()
	if status, ok := exited.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		code = 128 + int(status.Signal())
	}
	return utilexec.CodeExitError{Err: err, Code: code}
}
