module inlay.example/go

go 1.19
