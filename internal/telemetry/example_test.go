package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvshadow/kvshadow/internal/telemetry"
)

// A command's run function sets the SDK up from the environment, installs
// it for the libraries, and flushes it on the way out, even when the
// command's own context has been cancelled.
func ExampleSetup() {
	run := func(ctx context.Context, stderr io.Writer) (err error) {
		tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "shadow-report", Console: stderr})
		if err != nil {
			return err
		}
		tel.SetGlobal()
		defer func() {
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if serr := tel.Shutdown(flush); serr != nil && err == nil {
				err = serr
			}
		}()
		// ... the command's work, through instrumented stores ...
		return nil
	}
	fmt.Println(run(context.Background(), io.Discard))
	// Output: <nil>
}
